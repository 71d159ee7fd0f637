"""chat_pty.py — `ember chat` on a pseudo-terminal, for the shell tests that drive it
(test_cli_messages.sh: Ctrl-C; test_cli_habits.sh: line editing). Waits for what the
terminal shows, never for a fixed time: the timeout only guards against a hang."""
import os
import select
import subprocess


class ChatPty:
    def __init__(self, ember, model, backend, n):
        self.master, slave = os.openpty()
        self.p = subprocess.Popen([ember, "chat", "-m", model, "-n", str(n), "--backend", backend],
                                  stdin=slave, stdout=slave, stderr=slave, close_fds=True)
        os.close(slave)
        self.seen = b""

    def until(self, pred, timeout=120):
        """Reads the terminal until pred(all it showed) holds; returns whether it did."""
        import time
        end = time.time() + timeout
        while not pred(self.seen) and time.time() < end:
            if select.select([self.master], [], [], 0.1)[0]:
                try:
                    self.seen += os.read(self.master, 65536)
                except OSError:
                    break
        return pred(self.seen)

    def exit_status(self, timeout):
        """The program's exit status once it ends, or "hung" (killed) after timeout s."""
        import subprocess
        try:
            return self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            return "hung"

    def send(self, data):
        os.write(self.master, data)
