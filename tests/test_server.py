#!/usr/bin/env python3
"""test_server.py — `ember serve` on loopback, driven with the standard library only:
 - /health, /v1/models; /tokenize and /detokenize (llama.cpp's and vLLM's shapes, against
   `ember tokenize`); /v1/embeddings (OpenAI's four input shapes, unit vectors of the
   model's size, bit-identical alone, in a batch and beside a generation; base64; usage;
   the 400s); chat and completion requests, non-streamed and streamed (the
   streamed text equals the non-streamed one at temperature 0; chunks end in [DONE]);
 - a client that disconnects mid-stream: its request is cancelled and its KV blocks freed
   (ember_kv_blocks_used back to 0);
 - bad input: malformed JSON, wrong types, max_tokens or truncate_prompt_tokens out of range,
   n not an integer, a prompt longer than the context, an unknown model (404), a body over --max-body
   (413); unknown fields ignored; errors in OpenAI's shape;
 - n and best_of: choice i is seed + i's text; usage counts the prompt once; the samples
   share the prompt's blocks (prefix-cache hits); best_of keeps the most likely; streamed
   choices carry their index;
 - vLLM's truncate_prompt_tokens: a prompt longer than the context is refused without it and
   served with it (its last N tokens, BOS lost; -1 = the context less one), on both
   endpoints, streamed and not;
 - --state-dir: a prompt's KV state saved by one server and restored by another serves the
   same prompt from the prefix cache with the same text; bad names, missing and changed
   files refused;
 - --prefill-peer / --serve-prefill: a long prompt prefilled by a peer gives one server's
   text (F32 and Q8_0 models); a peer that dies mid-transfer, answers junk or more than
   --max-state-mib, or is gone costs a local prefill;
 - --api-key (401 without or with a wrong key); a full queue (503 with Retry-After);
 - 32 requests of 96 tokens from 16 concurrent clients: all 200, served together (their
   intervals overlap and the engine ran several at once).
Env: EMBER_BIN, EMBER_TEST_TMP (set by ctest)."""
import base64
import http.client
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

EMBER = os.environ.get("EMBER_BIN", "build/ember")
TMP = os.environ.get("EMBER_TEST_TMP", "/tmp")
SRC = os.environ.get("EMBER_SOURCE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
failures = 0


def check(cond, what):
    global failures
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures += 1


class Server:
    """An `ember serve` process on a free port; stopped with SIGTERM."""

    def __init__(self, model, *flags, env=None, host="127.0.0.1"):
        self.p = subprocess.Popen([EMBER, "serve", "-m", model, "--port", "0", *flags],
                                  stderr=subprocess.PIPE, text=True, env=env, errors="replace")
        self.port, self.host, self.lines = None, host, []
        self.cv = threading.Condition()
        deadline = time.time() + 60
        while time.time() < deadline and self.port is None:
            line = self.p.stderr.readline()
            if not line:
                break
            m = re.search(r"listening on http://(\S+):(\d+)$", line.strip())
            if m:
                self.port = int(m.group(2))
        if self.port is None:
            raise RuntimeError("ember serve did not start")
        threading.Thread(target=self._drain, daemon=True).start()  # keep the pipe drained, lines kept

    def _drain(self):
        for line in self.p.stderr:
            with self.cv:
                self.lines.append(line.rstrip("\n"))
                self.cv.notify_all()

    def wait_line(self, pattern, timeout=60):
        """The first stderr line matching pattern (re.search), waited for; None if none came."""
        deadline = time.time() + timeout
        with self.cv:
            while True:
                for line in self.lines:
                    if re.search(pattern, line):
                        return line
                left = deadline - time.time()
                if left <= 0:
                    return None
                self.cv.wait(left)

    def request(self, method, path, body=None, headers=None, raw=None, timeout=120):
        c = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        c.request(method, path, body=data, headers=headers or {})
        r = c.getresponse()
        text = r.read().decode()
        c.close()
        return r.status, dict(r.getheaders()), text

    def post(self, path, body, **kw):
        status, headers, text = self.request("POST", path, body, **kw)
        try:
            return status, headers, json.loads(text)
        except ValueError:
            return status, headers, text

    def stream(self, path, body, headers=None):
        """The events of a streamed response: (status, [parsed chunks], saw_done)."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        c.request("POST", path, body=json.dumps(dict(body, stream=True)), headers=headers or {})
        r = c.getresponse()
        chunks, done = [], False
        for line in r.read().decode().split("\n"):
            if line.startswith("data: "):
                if line == "data: [DONE]":
                    done = True
                else:
                    chunks.append(json.loads(line[6:]))
        c.close()
        return r.status, chunks, done

    def metrics(self):
        _, _, text = self.request("GET", "/metrics")
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#") and " " in line:
                k, v = line.rsplit(" ", 1)
                out[k] = float(v)
        return out

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        try:
            return self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            return -1


CHAT = "/v1/chat/completions"
CMPL = "/v1/completions"


def test_basic(s):
    status, _, text = s.request("GET", "/health")
    check(status == 200 and json.loads(text)["status"] == "ok", "GET /health")
    status, _, text = s.request("GET", "/v1/models")
    models = json.loads(text)
    check(status == 200 and models["data"][0]["id"] == "test-model", "GET /v1/models names the model")
    req = {"model": "test-model", "messages": [{"role": "system", "content": "Be brief."},
                                                {"role": "user", "content": "hello there"}],
           "max_tokens": 12, "temperature": 0, "ignore_eos": True}
    status, _, r = s.post(CHAT, req)
    ok = status == 200 and r["object"] == "chat.completion" and r["choices"][0]["finish_reason"] == "length"
    check(ok and r["usage"]["completion_tokens"] == 12 and r["usage"]["prompt_tokens"] > 0 and
          r["usage"]["total_tokens"] == r["usage"]["prompt_tokens"] + 12,
          "chat completion: message, finish_reason length, usage")
    status, chunks, done = s.stream(CHAT, req)
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    check(status == 200 and done and chunks[0]["choices"][0]["delta"].get("role") == "assistant" and
          chunks[-1]["choices"][0]["finish_reason"] == "length" and text == r["choices"][0]["message"]["content"],
          f"streamed chat: {len(chunks)} chunks, role first, finish_reason last, [DONE], same text")
    creq = {"prompt": "hello there", "max_tokens": 10, "temperature": 0, "ignore_eos": True}
    status, _, c = s.post(CMPL, creq)
    check(status == 200 and c["object"] == "text_completion" and c["usage"]["completion_tokens"] == 10,
          "completion")
    status, chunks, done = s.stream(CMPL, dict(creq, stream_options={"include_usage": True}))
    text = "".join(ch["choices"][0]["text"] for ch in chunks if ch["choices"])
    check(status == 200 and done and text == c["choices"][0]["text"] and
          chunks[-1]["usage"]["completion_tokens"] == 10, "streamed completion: same text, usage chunk")
    status, _, c = s.post(CMPL, {"prompt": [5, 6, 7, 8], "max_tokens": 4, "stop": ["zz"], "seed": 3,
                                 "top_k": 5, "min_p": 0.05, "repetition_penalty": 1.1, "logit_bias": {},
                                 "user": "someone", "temperature": 0.7})
    check(status == 200 and c["usage"]["prompt_tokens"] == 4,
          "a prompt of token ids, vLLM's extra fields, unknown fields ignored")


def test_tokens(s, model, ctx):
    """/tokenize and /detokenize in llama.cpp's and vLLM's shapes."""
    text = "hello world, once upon a time"
    status, _, r = s.post("/tokenize", {"content": text})
    check(status == 200 and r["tokens"] == tokenize(model, text, False) and r["count"] == len(r["tokens"]) and
          r["max_model_len"] == ctx, "/tokenize content: the library's ids, no BOS (llama.cpp's default), count")
    status, _, v = s.post("/tokenize", {"model": "test-model", "prompt": text})
    check(status == 200 and v["tokens"] == tokenize(model, text) and v["tokens"][0] == 1,
          "/tokenize prompt: with BOS (vLLM's add_special_tokens default)")
    _, _, a = s.post("/tokenize", {"content": text, "add_special": True})
    _, _, b = s.post("/tokenize", {"prompt": text, "add_special_tokens": False})
    check(a["tokens"] == v["tokens"] and b["tokens"] == r["tokens"], "add_special / add_special_tokens both ways")
    _, _, sp = s.post("/tokenize", {"content": "a</s>b"})
    _, _, pl = s.post("/tokenize", {"content": "a</s>b", "parse_special": False})
    check(2 in sp["tokens"] and 2 not in pl["tokens"] and len(pl["tokens"]) > len(sp["tokens"]),
          "control-token text parsed by default, plain with parse_special false")
    _, _, mixed = s.post("/tokenize", {"content": ["hello", 7, " world"], "add_special": True})
    check(mixed["tokens"] == [1] + tokenize(model, "hello", False) + [7] + tokenize(model, " world", False),
          "content as a list of strings and ids: BOS only before the first")
    _, _, wp = s.post("/tokenize", {"content": text + "</s>", "with_pieces": True})
    pieces = "".join(p["piece"] for p in wp["tokens"])
    _, _, d = s.post("/detokenize", {"tokens": [p["id"] for p in wp["tokens"]]})
    check(all(set(p) == {"id", "piece"} for p in wp["tokens"]) and pieces.endswith("</s>") and
          d["content"] == pieces and d["prompt"] == pieces and d["content"].strip() == text + "</s>",
          f"with_pieces: id and piece; /detokenize joins them, control text kept: {d['content']!r}")
    _, _, e = s.post("/tokenize", {"content": "\u00e9", "with_pieces": True})
    byte_pieces = [p["piece"] for p in e["tokens"] if isinstance(p["piece"], list)]
    check(any(bp == [0xC3] for bp in byte_pieces) and any(bp == [0xA9] for bp in byte_pieces),
          f"a piece that is part of a character comes as its bytes: {e['tokens']}")
    _, _, cut = s.post("/detokenize", {"tokens": [p["id"] for p in e["tokens"]][:-1]})
    check(cut["content"].endswith("\ufffd"), "a character cut short detokenizes to U+FFFD")
    for path, body, param, what in [
            ("/tokenize", {"messages": [{"role": "user", "content": "x"}]}, "messages", "vLLM's chat form"),
            ("/tokenize", {"prompt": "x", "return_token_strs": True}, "return_token_strs", "token strings"),
            ("/tokenize", {"content": "x", "prompt": "y"}, "prompt", "both inputs"),
            ("/tokenize", {}, "content", "no input"),
            ("/tokenize", {"content": ["x", 512]}, "content", "an id past the vocabulary"),
            ("/tokenize", {"content": "x", "with_pieces": 1}, "with_pieces", "a non-boolean flag"),
            ("/detokenize", {"tokens": [1, -2]}, "tokens", "a negative id"),
            ("/detokenize", {"tokens": "1 2"}, "tokens", "tokens not a list")]:
        status, _, r = s.post(path, body)
        check(status == 400 and r["error"]["param"] == param, f"{path} refuses {what} naming '{param}'")
    status, _, r = s.post("/detokenize", {"model": "other", "tokens": [1]})
    check(status == 200, f"/detokenize: any model name is taken: {status}")
    status, _, _ = s.request("GET", "/tokenize")
    check(status == 405, "GET /tokenize is a 405")


EMB = "/v1/embeddings"


def vectors(r):
    """The float vectors of an embeddings response, by index."""
    return [d["embedding"] for d in sorted(r["data"], key=lambda d: d["index"])]


def unit_norm(v):
    return abs(sum(x * x for x in v) ** 0.5 - 1) < 1e-4


def as_f32(v):
    """Floats as float32 values: what the base64 bytes hold (the JSON keeps 9 digits)."""
    return list(struct.unpack(f"<{len(v)}f", struct.pack(f"<{len(v)}f", *v)))


def test_embeddings(s, dim):
    """POST /v1/embeddings: OpenAI's four input shapes each give one unit vector of the
    model's size per input, in order; a text's vector is bit-identical alone, inside a
    batch of other inputs and beside a generation (which keeps its own text); base64 holds
    the same floats; usage counts /tokenize's tokens; the 400s name their field."""
    text = "hello world, once upon a time"
    shapes = (("a string", text, 1, None), ("a list of strings", ["hello", "world", "a cat"], 3, None),
              ("token ids", [5, 6, 7, 8], 1, 4), ("a list of token-id lists", [[5, 6], [7, 8, 9]], 2, 5))
    for what, inp, n, n_prompt in shapes:
        status, _, r = s.post(EMB, {"model": "test-model", "input": inp, "user": "someone", "unknown_field": 1})
        vs = vectors(r) if status == 200 else []
        check(status == 200 and r["object"] == "list" and r["model"] == "test-model" and
              [d["index"] for d in r["data"]] == list(range(n)) and all(d["object"] == "embedding" for d in r["data"])
              and len(vs) == n and all(len(v) == dim and unit_norm(v) for v in vs) and
              (n_prompt is None or r["usage"]["prompt_tokens"] == r["usage"]["total_tokens"] == n_prompt),
              f"embeddings of {what}: {len(vs)} unit vectors of {dim}, in order, usage {r.get('usage')}")
        if n == 3:
            check(len({tuple(v) for v in vs}) == 3, "different texts give different vectors")
    _, _, tok = s.post("/tokenize", {"content": text, "add_special": True})
    status, _, r = s.post(EMB, {"input": text})
    alone = vectors(r)[0]
    check(status == 200 and r["usage"]["prompt_tokens"] == len(tok["tokens"]) == r["usage"]["total_tokens"],
          f"usage.prompt_tokens is /tokenize's count with BOS ({len(tok['tokens'])})")
    status, _, r = s.post(EMB, {"input": [text, "the other one", "b", text + " and more", "zzz yyy"]})
    check(status == 200 and vectors(r)[0] == alone, "a text's vector is bit-identical alone and in a batch of 5")
    status, _, r = s.post(EMB, {"input": ["first", "second", "third", "fourth", text]})
    check(status == 200 and vectors(r)[4] == alone, "... and last in another batch of 5")
    status, _, b = s.post(EMB, {"input": text, "encoding_format": "base64", "dimensions": dim})
    raw = base64.b64decode(b["data"][0]["embedding"]) if status == 200 else b""
    check(len(raw) == 4 * dim and list(struct.unpack(f"<{dim}f", raw)) == as_f32(alone),
          "encoding_format base64: little-endian float32 bytes, the same floats; dimensions = the model's accepted")
    test_embeddings_beside_generation(s, text, alone)
    test_embeddings_refused(s, dim)


def test_embeddings_beside_generation(s, text, alone):
    """Embeddings while a streamed completion runs: the vectors are bit-identical to the
    text's alone, and the completion's text is what it is alone."""
    req = {"prompt": "once upon a time", "max_tokens": 200, "ignore_eos": True, "temperature": 0}
    _, _, want = s.post(CMPL, req)
    done = {}

    def generate():
        done["stream"] = s.stream(CMPL, req)
        done["at"] = time.time()

    t = threading.Thread(target=generate)
    t.start()
    deadline = time.time() + 30
    while t.is_alive() and time.time() < deadline and s.metrics()["ember_requests_running"] < 1:
        pass  # polled back to back: a pause could miss the whole completion on a fast device
    got, during = [], 0
    while not got or (t.is_alive() and len(got) < 50):
        status, _, r = s.post(EMB, {"input": text})
        got.append(vectors(r)[0] if status == 200 else None)
        during += t.is_alive()
    t.join()
    status, chunks, finished = done["stream"]
    streamed = "".join(c["choices"][0]["text"] for c in chunks if c.get("choices"))
    check(all(v == alone for v in got) and status == 200 and finished and streamed == want["choices"][0]["text"],
          f"beside a streamed completion: {len(got)} vectors bit-identical to the one alone ({during} sent while "
          f"it ran), and its text is the one it has alone")


def test_embeddings_refused(s, dim):
    for what, body, param in (
            ("an empty string", {"input": ""}, "input"),
            ("an empty string in a list", {"input": ["a", ""]}, "input"),
            ("an empty list", {"input": []}, "input"),
            ("an empty token-id list", {"input": [[1, 2], []]}, "input"),
            ("a token id past the vocabulary", {"input": [5, 512]}, "input"),
            ("a negative token id", {"input": [[5, -1]]}, "input"),
            ("a token id that is not an integer", {"input": [5, 6.5]}, "input"),
            ("a number", {"input": 5}, "input"),
            ("an object", {"input": {"text": "a"}}, "input"),
            ("strings and ids mixed", {"input": ["a", 3]}, "input"),
            ("ids and strings mixed", {"input": [3, "a"]}, "input"),
            ("a list of lists of strings", {"input": [["a"]]}, "input"),
            ("booleans", {"input": [True]}, "input"),
            ("no input", {"model": "test-model"}, "input"),
            ("input null", {"input": None}, "input"),
            ("more than 2048 inputs", {"input": ["a"] * 2049}, "input"),
            ("an unknown encoding_format", {"input": "a", "encoding_format": "hex"}, "encoding_format"),
            ("dimensions other than the model's", {"input": "a", "dimensions": dim // 2}, "dimensions")):
        bad(s, f"/v1/embeddings refuses {what}", body, 400, param, path=EMB)
    status, _, r = s.post(EMB, {"model": "gpt-9", "input": "a"})
    check(status == 200 and r["model"] == "test-model", f"/v1/embeddings: any model name is taken: {status}")
    long_text = "hello there " * 300
    bad(s, "/v1/embeddings: an input longer than the context (after two that fit: they are cancelled)",
        {"input": ["a", "b", long_text]}, 400, "input", "context_length_exceeded", path=EMB)
    deadline, m = time.time() + 30, {}
    while time.time() < deadline:
        m = s.metrics()
        if m["ember_kv_blocks_used"] == 0 and m["ember_requests_running"] == 0 and m["ember_requests_waiting"] == 0:
            break
        time.sleep(0.05)
    check(m["ember_kv_blocks_used"] == 0 and m["ember_requests_running"] == 0,
          f"nothing left running or holding KV blocks ({m['ember_kv_blocks_used']:.0f} blocks)")
    status, _, _ = s.request("GET", EMB)
    check(status == 405, "GET /v1/embeddings is a 405")
    status, _, r = s.post(EMB, {"input": ["a", "b"]})
    after, length = s.metrics(), 'ember_requests_finished_total{reason="length"}'
    counted = (after[length] - m[length], after["ember_prompt_tokens_total"] - m["ember_prompt_tokens_total"])
    check(status == 200 and len(r["data"]) == 2 and counted == (0, r["usage"]["prompt_tokens"]),
          f"then embeddings are served again, their prompt tokens in /metrics, no finish reason: {counted}")


def test_embeddings_reranker():
    """A model whose GGUF declares rank pooling (a reranker): embeddings are a 400 saying
    so, and completions are still served."""
    model = os.path.join(TMP, "server_model_rank.gguf")
    subprocess.run([EMBER, "make-test-model", model, "--dim", "64", "--layers", "2", "--heads", "4", "--kv-heads",
                    "2", "--ffn", "128", "--vocab", "512", "--ctx", "256", "--pooling", "4"],
                   check=True, stdout=subprocess.DEVNULL)
    s = Server(model, "--model-name", "test-model")
    try:
        bad(s, "/v1/embeddings on a reranker (rank pooling)", {"input": ["a", "b"]}, 400, path=EMB)
        status, _, _ = s.post(CMPL, {"prompt": "hi", "max_tokens": 2})
        check(status == 200, "... which still serves completions")
    finally:
        s.stop()


def generate_logprobs(model, prompt, n, k):
    """`ember generate --logprobs K --json`: the library's tokens and log-probabilities."""
    out = subprocess.run([EMBER, "generate", "-m", model, "-p", prompt, "-n", str(n), "--ignore-eos", "--json",
                          "--logprobs", str(k)], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def test_logprobs(s, model):
    """logprobs on both endpoints, streamed and not, against `ember generate --logprobs`."""
    ref = generate_logprobs(model, "hello there", 6, 2)
    status, _, c = s.post(CMPL, {"prompt": "hello there", "max_tokens": 6, "temperature": 0, "ignore_eos": True,
                                 "logprobs": 2})
    lp = c["choices"][0]["logprobs"] if status == 200 else {}
    check(status == 200 and len(lp["tokens"]) == 6 and len(lp["token_logprobs"]) == 6 and
          len(lp["top_logprobs"]) == 6 and len(lp["text_offset"]) == 6,
          "completions logprobs: tokens, token_logprobs, top_logprobs, text_offset for each token")
    check(all(abs(a - b["logprob"]) < 1e-5 for a, b in zip(lp["token_logprobs"], ref["logprobs"])),
          f"completions logprobs: the values `ember generate --logprobs` gives: {lp['token_logprobs']}")
    check(all(t in top and abs(top[t] - v) < 1e-9 and len(top) in (2, 3)
              for t, v, top in zip(lp["tokens"], lp["token_logprobs"], lp["top_logprobs"])),
          "each position's top list holds the two best and the chosen token")
    whole = all(not t.startswith("bytes:") for t in lp["tokens"])
    check(all(lp["text_offset"][i + 1] == lp["text_offset"][i] + len(lp["tokens"][i]) for i in range(5)) and
          (not whole or "".join(lp["tokens"]) == c["choices"][0]["text"]),
          f"text_offset counts the tokens' characters: {lp['text_offset']}")
    status, chunks, done = s.stream(CMPL, {"prompt": "hello there", "max_tokens": 6, "temperature": 0,
                                           "ignore_eos": True, "logprobs": 2})
    streamed = {"tokens": [], "token_logprobs": [], "text_offset": []}
    for ch in chunks:
        for k in streamed:
            streamed[k] += (ch["choices"][0].get("logprobs") or {}).get(k, []) if ch.get("choices") else []
    check(done and streamed["tokens"] == lp["tokens"] and streamed["text_offset"] == lp["text_offset"] and
          streamed["token_logprobs"] == lp["token_logprobs"], "streamed completions: the same entries, in order")
    req = {"messages": [{"role": "user", "content": "hello"}], "max_tokens": 5, "temperature": 0,
           "ignore_eos": True, "logprobs": True, "top_logprobs": 3}
    status, _, r = s.post(CHAT, req)
    content = r["choices"][0]["logprobs"]["content"] if status == 200 else []
    check(len(content) == 5 and all(set(e) == {"token", "logprob", "bytes", "top_logprobs"} and
                                    len(e["top_logprobs"]) == 3 and e["top_logprobs"][0]["logprob"] >= e["logprob"] and
                                    bytes(e["bytes"]).decode("utf-8", "replace") == e["token"] for e in content),
          "chat logprobs: token, logprob, bytes, top 3 for each token")
    check(b"".join(bytes(e["bytes"]) for e in content).decode("utf-8", "replace") ==
          r["choices"][0]["message"]["content"], "chat logprobs: the tokens' bytes make the reply")
    status, chunks, done = s.stream(CHAT, req)
    got = [e for ch in chunks if ch.get("choices") for e in ((ch["choices"][0].get("logprobs") or {}).get("content") or [])]
    check(done and got == content, "streamed chat: the same entries, in order")
    status, _, r = s.post(CHAT, dict(req, logprobs=False, top_logprobs=None))
    check(status == 200 and r["choices"][0]["logprobs"] is None, "no logprobs asked: null")
    test_echo(s, model)


def test_echo(s, model):
    """echo on /v1/completions, and a loglikelihood request as lm-evaluation-harness sends
    it (token ids, echo, max_tokens 1, logprobs 1, temperature 0): the prompt's
    log-probabilities sum to what `ember perplexity` computes for the same text."""
    text = "once upon a time there was a little cat who liked to play in the garden with a ball"
    path = os.path.join(TMP, "server_echo.txt")
    with open(path, "w") as f:
        f.write(text)
    ppl = json.loads(subprocess.run([EMBER, "perplexity", "-m", model, "-f", path, "--json"], check=True,
                                    capture_output=True, text=True).stdout)
    ids = tokenize(model, text)
    status, _, r = s.post(CMPL, {"model": "test-model", "prompt": ids, "echo": True, "max_tokens": 1, "logprobs": 1,
                                 "temperature": 0, "seed": 1234})
    lp = r["choices"][0]["logprobs"] if status == 200 else {}
    scores = lp.get("token_logprobs", [])
    total = -sum(scores[1:-1]) if len(scores) == len(ids) + 1 else None
    check(status == 200 and scores[0] is None and lp["top_logprobs"][0] is None and len(scores) == len(ids) + 1 and
          total is not None and abs(total - ppl["nll"]) < 1e-3 * ppl["scored"] and ppl["scored"] == len(ids) - 1,
          f"lm-eval's loglikelihood request: -sum of the prompt's logprobs {total} = ember perplexity's nll {ppl['nll']}")
    check(r["choices"][0]["text"].startswith("<s>") and lp["text_offset"][1] == 3,
          "echo of token ids: their text, offsets counting it (<s> then the rest)")
    status, _, r0 = s.post(CMPL, {"prompt": ids, "echo": True, "max_tokens": 0, "logprobs": 0})
    check(status == 200 and r0["usage"]["completion_tokens"] == 0 and r0["choices"][0]["finish_reason"] == "length" and
          r0["choices"][0]["logprobs"]["token_logprobs"] == scores[:-1],
          "max_tokens 0 with echo: the prompt alone, the same values")
    status, _, r1 = s.post(CMPL, {"prompt": text, "echo": True, "max_tokens": 3, "temperature": 0})
    status2, _, r2 = s.post(CMPL, {"prompt": text, "max_tokens": 3, "temperature": 0})
    check(status == 200 and r1["choices"][0]["text"] == text + r2["choices"][0]["text"] and
          r1["choices"][0]["logprobs"] is None, "echo of a text prompt: the prompt as given, then the reply")
    status, chunks, done = s.stream(CMPL, {"prompt": ids, "echo": True, "max_tokens": 1, "logprobs": 1,
                                           "temperature": 0, "seed": 1234})
    streamed = [v for ch in chunks if ch.get("choices")
                for v in ((ch["choices"][0].get("logprobs") or {}).get("token_logprobs") or [])]
    text_s = "".join(ch["choices"][0]["text"] for ch in chunks if ch.get("choices"))
    check(done and streamed == scores and text_s == r["choices"][0]["text"], "streamed echo: the same text and values")
    bad(s, "max_tokens 0 without echo", {"prompt": "hi", "max_tokens": 0}, 400, "max_tokens", path=CMPL)
    bad(s, "echo not a boolean", {"prompt": "hi", "echo": 1}, 400, "echo", path=CMPL)


METRICS = ["ember_requests_running", "ember_requests_waiting", "ember_kv_blocks_used", "ember_kv_blocks_total",
           "ember_time_to_first_token_seconds_count", "ember_inter_token_latency_seconds_count",
           "ember_e2e_request_latency_seconds_count", "ember_prompt_tokens_total", "ember_generation_tokens_total",
           "ember_prefix_cache_hit_tokens_total", "ember_preemptions_total", "ember_spec_draft_tokens_total",
           "ember_spec_accepted_tokens_total", 'ember_sampled_tokens_total{from="candidates"}',
           'ember_sampled_tokens_total{from="rows"}']


FINISH_REASONS = ["length", "eos", "stop", "cancelled", "error", "kv_full", "context", "grammar"]


def test_metric_names(s):
    m = s.metrics()
    missing = [k for k in METRICS if k not in m]
    check(not missing and m["ember_e2e_request_latency_seconds_count"] > 0 and m["ember_generation_tokens_total"] > 0,
          f"/metrics has every name the issue lists (missing: {missing})")
    sampled = m.get('ember_sampled_tokens_total{from="candidates"}', 0) + m.get('ember_sampled_tokens_total{from="rows"}', 0)
    check(0 < sampled <= m["ember_generation_tokens_total"],
          f"sampled tokens ({sampled:.0f}) counted, at most the tokens generated")
    finished = {r: m.get(f'ember_requests_finished_total{{reason="{r}"}}') for r in FINISH_REASONS}
    check(None not in finished.values() and finished["length"] > 0 and
          sum(finished.values()) == m["ember_e2e_request_latency_seconds_count"],
          f"finished requests by reason {finished} add up to the requests timed end to end "
          f"({m['ember_e2e_request_latency_seconds_count']:.0f})")


def test_logit_bias(s):
    """OpenAI's logit_bias: +100 on a token makes a greedy reply that token again and again;
    so does -100 on every other token; 0 changes nothing."""
    base = {"prompt": "hello there", "max_tokens": 4, "temperature": 0, "ignore_eos": True}
    _, _, plain = s.post(CMPL, base)
    _, _, forced = s.post(CMPL, dict(base, logit_bias={"300": 100}))
    text = forced["choices"][0]["text"] if isinstance(forced, dict) else ""
    piece = text[:len(text) // 4]
    check(piece and text == piece * 4 and forced["usage"]["completion_tokens"] == 4,
          f"logit_bias +100 on token 300: the same piece 4 times ({text!r})")
    _, _, zero = s.post(CMPL, dict(base, logit_bias={"300": 0}))
    check(zero["choices"][0]["text"] == plain["choices"][0]["text"], "logit_bias 0 changes nothing")
    _, _, others = s.post(CMPL, dict(base, logit_bias={str(i): -100 for i in range(512) if i != 300}))
    check(others["choices"][0]["text"] == text and text != plain["choices"][0]["text"],
          f"logit_bias -100 on every other token leaves token 300 ({others['choices'][0]['text']!r})")


def test_stop_and_seed(s):
    """A stop string ends the text before it (finish_reason stop); the same seed gives the
    same sampled text, another seed (almost surely) another."""
    base = {"prompt": "hello there", "max_tokens": 24, "temperature": 0, "ignore_eos": True}
    full = s.post(CMPL, base)[2]["choices"][0]["text"]
    cut = full.find(" ", 4)
    stop = full[cut:cut + 3] if cut > 0 else full[4:7]
    status, _, r = s.post(CMPL, dict(base, stop=[stop]))
    c = r["choices"][0]
    check(status == 200 and c["finish_reason"] == "stop" and full.startswith(c["text"]) and stop not in c["text"]
          and len(c["text"]) < len(full), f"stop {stop!r}: {c['text']!r}, finish_reason {c['finish_reason']}")
    sampled = dict(base, temperature=1.0, seed=7)
    a = s.post(CMPL, sampled)[2]["choices"][0]["text"]
    b = s.post(CMPL, sampled)[2]["choices"][0]["text"]
    other = s.post(CMPL, dict(sampled, seed=8))[2]["choices"][0]["text"]
    check(a == b and a != other, "seed 7 twice: the same text; seed 8: another")


def test_samples(s):
    """n and best_of: choice i is what seed + i gives alone; usage counts the prompt once
    and every sample's tokens; the samples share the prompt's KV blocks (the prefix cache
    served n - 1 of them the prompt but its last token); best_of returns the n samples of
    highest summed log-probability, best first; a stream carries each choice's index."""
    base = {"prompt": "the samples of one prompt share its blocks", "max_tokens": 12, "temperature": 1.0,
            "seed": 40, "ignore_eos": True}
    alone = [s.post(CMPL, dict(base, seed=40 + i))[2]["choices"][0]["text"] for i in range(4)]
    hits = s.metrics()["ember_prefix_cache_hit_tokens_total"]
    status, _, r = s.post(CMPL, dict(base, prompt=base["prompt"] + " again", n=4))
    hits = s.metrics()["ember_prefix_cache_hit_tokens_total"] - hits
    texts = [c["text"] for c in r["choices"]]
    u = r["usage"]
    check(status == 200 and [c["index"] for c in r["choices"]] == [0, 1, 2, 3] and len(set(texts)) > 1,
          f"n = 4: four choices, indexed: {texts}")
    p_tokens = s.post(CMPL, dict(base, prompt=base["prompt"] + " again", max_tokens=1))[2]["usage"]["prompt_tokens"]
    check(u["prompt_tokens"] == p_tokens and u["completion_tokens"] == 4 * 12 and
          u["total_tokens"] == p_tokens + 48, f"n = 4: usage counts the prompt once: {u}")
    check(hits >= 3 * (p_tokens - 1), f"n = 4: {hits:.0f} prompt tokens from the prefix cache (at least 3 x "
          f"{p_tokens - 1}: the samples share the prompt's blocks)")
    r = s.post(CMPL, dict(base, n=4))[2]
    check([c["text"] for c in r["choices"]] == alone, "n = 4: choice i is seed + i's text alone")
    scored = s.post(CMPL, dict(base, n=4, logprobs=0))[2]["choices"]
    sums = sorted(((sum(c["logprobs"]["token_logprobs"]), c["text"]) for c in scored), reverse=True)
    status, _, r = s.post(CMPL, dict(base, n=2, best_of=4))
    check(status == 200 and [c["text"] for c in r["choices"]] == [t for _, t in sums[:2]] and
          r["usage"]["completion_tokens"] == 4 * 12,
          f"best_of 4, n 2: the two most likely of the four samples, best first: {[c['text'] for c in r['choices']]}")
    status, chunks, done = s.stream(CHAT, {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 6,
                                           "temperature": 1.0, "seed": 3, "n": 3,
                                           "stream_options": {"include_usage": True}})
    plain = s.post(CHAT, {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 6, "temperature": 1.0,
                          "seed": 3, "n": 3})[2]
    got = {}
    finished = set()
    for ch in chunks:
        for c in ch["choices"]:
            got[c["index"]] = got.get(c["index"], "") + (c["delta"].get("content") or "")
            if c["finish_reason"]:
                finished.add(c["index"])
    want = {c["index"]: c["message"]["content"] for c in plain["choices"]}
    check(status == 200 and done and got == want and finished == {0, 1, 2} and
          chunks[-1]["usage"]["completion_tokens"] == 18, f"n = 3 streamed: each index's text as not streamed: {got}")
    bad(s, "best_of below n", {"prompt": "hi", "n": 3, "best_of": 2}, 400, "best_of", path=CMPL)
    bad(s, "best_of > n streamed", {"prompt": "hi", "n": 1, "best_of": 2, "stream": True}, 400, "best_of",
        path=CMPL)
    bad(s, "n = 0", {"prompt": "hi", "n": 0}, 400, "n", path=CMPL)
    bad(s, "n = 129", {"prompt": "hi", "n": 129}, 400, "n", path=CMPL)


def test_loopback_only(s):
    """Without --host the listening socket is bound to 127.0.0.1 (/proc/net/tcp)."""
    local = set()
    for line in open("/proc/net/tcp").read().splitlines()[1:]:
        f = line.split()
        addr, port = f[1].split(":")
        if int(port, 16) == s.port and f[3] == "0A":  # LISTEN
            local.add(addr)
    check(local == {"0100007F"}, f"listens on 127.0.0.1 only: {sorted(local)}")


def test_disconnect(s):
    """A client that hangs up after three streamed chunks: its request is cancelled before its
    200 tokens (finish reason cancelled) and its KV blocks freed. The socket closes at once
    on the third chunk: a /metrics read in between gave a fast engine the time to finish
    all 200 first. What follows waits for the cancellation to show, not for a time."""
    before = s.metrics()
    sock = socket.create_connection(("127.0.0.1", s.port))
    body = json.dumps({"prompt": "hello", "max_tokens": 200, "ignore_eos": True, "stream": True})
    sock.sendall((f"POST {CMPL} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  f"Content-Length: {len(body)}\r\n\r\n{body}").encode())
    sock.settimeout(30)
    got = b""
    while got.count(b"data: ") < 3:
        more = sock.recv(4096)
        if not more:
            break
        got += more
    sock.close()
    cancelled = 'ember_requests_finished_total{reason="cancelled"}'
    deadline, m = time.time() + 60, {}
    while time.time() < deadline:  # the cancellation is noticed at the server's next write
        m = s.metrics()
        if m[cancelled] > before[cancelled] and m["ember_kv_blocks_used"] == 0 and m["ember_requests_running"] == 0:
            break
        time.sleep(0.1)
    gen = m["ember_generation_tokens_total"] - before["ember_generation_tokens_total"]
    check(got.count(b"data: ") >= 3 and m[cancelled] - before[cancelled] == 1 and 3 <= gen < 200 and
          m["ember_kv_blocks_used"] == 0 and m["ember_requests_running"] == 0,
          f"a client that disconnects after {got.count(b'data: ')} chunks: its request is cancelled "
          f"({m[cancelled] - before[cancelled]:.0f} cancelled, {gen:.0f} of 200 tokens), KV blocks in use "
          f"{m['ember_kv_blocks_used']:.0f}, running {m['ember_requests_running']:.0f}")


REFUSED = {}  # status -> how many requests bad() has had refused with it


def refused(m, status):
    return m.get(f'ember_requests_refused_total{{status="{status}"}}', -1)


def bad(s, what, body, status, param=None, code=None, raw=None, headers=None, path=CHAT):
    got, _, r = s.post(path, body, raw=raw, headers=headers)
    REFUSED[got] = REFUSED.get(got, 0) + 1
    err = r.get("error", {}) if isinstance(r, dict) else {}
    shape = set(err) == {"message", "type", "param", "code"} and err["message"]
    check(got == status and shape and (param is None or err["param"] == param) and
          (code is None or err["code"] == code), f"{what}: {got} {err.get('message', r)!r}")


def test_bad_input(s, ctx):
    before = s.metrics()
    REFUSED.clear()
    msgs = [{"role": "user", "content": "hi"}]
    bad(s, "malformed JSON", None, 400, raw=b'{"messages": [', code="invalid_json")
    bad(s, "not an object", None, 400, raw=b"[1, 2]")
    bad(s, "temperature of the wrong type", {"messages": msgs, "temperature": "hot"}, 400, "temperature")
    bad(s, "max_tokens 0", {"messages": msgs, "max_tokens": 0}, 400, "max_tokens")
    bad(s, "max_tokens beyond the context", {"messages": msgs, "max_tokens": ctx + 1}, 400, "max_tokens")
    bad(s, "max_tokens not an integer", {"messages": msgs, "max_tokens": 2.5}, 400, "max_tokens")
    for t in (0, -2, 2.5, "10", True, ctx):  # ctx: a prompt of the whole context leaves no room for a reply
        bad(s, f"truncate_prompt_tokens {t!r}", {"messages": msgs, "truncate_prompt_tokens": t}, 400,
            "truncate_prompt_tokens")
    bad(s, "n = 2.5", {"messages": msgs, "n": 2.5}, 400, "n")
    bad(s, "top_logprobs 21", {"messages": msgs, "logprobs": True, "top_logprobs": 21}, 400, "top_logprobs")
    bad(s, "top_logprobs without logprobs", {"messages": msgs, "top_logprobs": 2}, 400, "top_logprobs")
    bad(s, "logprobs not a boolean", {"messages": msgs, "logprobs": 2}, 400, "logprobs")
    bad(s, "completions' logprobs 21", {"prompt": "hi", "logprobs": 21}, 400, "logprobs", path=CMPL)
    # OpenAI fields Ember knows and does not honour: refused by name when they ask for something
    for path, field, value in [(CMPL, "suffix", "end"), (CHAT, "functions", [{"name": "f"}]),
                               (CHAT, "function_call", "auto"), (CHAT, "audio", {"voice": "x"}),
                               (CHAT, "modalities", ["text", "audio"]), (CHAT, "prediction", {"type": "content"}),
                               (CHAT, "web_search_options", {}), (CHAT, "store", True),
                               (CHAT, "reasoning_effort", "low"), (CHAT, "verbosity", "low")]:
        body = {"messages": msgs} if path == CHAT else {"prompt": "hi"}
        bad(s, f"{path} {field} {value!r}", dict(body, **{field: value}), 400, field, "unsupported_parameter",
            path=path)
    quiet = [(CHAT, {"logprobs": False, "top_logprobs": 0, "modalities": ["text"], "store": False,
                     "functions": None, "audio": None, "service_tier": "auto", "user": "u", "metadata": {"a": "b"},
                     "prompt_cache_key": "k", "safety_identifier": "s"}),
             (CMPL, {"logprobs": None, "echo": False, "best_of": 1, "suffix": "", "user": "u"})]
    for path, extra in quiet:
        body = dict({"messages": msgs} if path == CHAT else {"prompt": "hi"}, max_tokens=2, **extra)
        got, _, r = s.post(path, body)
        check(got == 200, f"{path}: the same fields asking for nothing are served: {got} {r if got != 200 else ''}")
    bad(s, "messages missing", {"max_tokens": 4}, 400, "messages")
    bad(s, "a message without a role", {"messages": [{"content": "x"}]}, 400, "messages")
    got, _, r = s.post(CHAT, {"messages": [{"role": "robot", "content": "x"}]})
    m = r.get("error", {}).get("message", "") if isinstance(r, dict) else ""
    check(got == 400 and all(x in m for x in ("system", "developer", "user", "assistant", "tool", "'robot'")),
          f"an unknown role: the roles accepted, tool included: {m!r}")
    got, _, r = s.post(CHAT, {"messages": [{"role": "user", "content": [
        {"type": "text", "text": "what is this?"}, {"type": "image_url", "image_url": {"url": "data:,"}}]}]})
    m = r.get("error", {}).get("message", "") if isinstance(r, dict) else ""
    check(got == 400 and "images are not supported" in m, f"an image_url part: images are not supported: {m!r}")
    got, _, r = s.post(CHAT, None, raw=b'{"messages": [{"role": "user", "content": "a\\ud800b"}]}')
    m = r.get("error", {}).get("message", "") if isinstance(r, dict) else ""
    check(got == 400 and "surrogate" in m and "not a JSON object" not in m, f"a lone \\ud800: says so: {m!r}")
    got, _, r = s.post(CHAT, {"messages": [{"role": "user", "content": "a\U0001F600b"}], "max_tokens": 2})
    check(got == 200, f"a surrogate pair (json.dumps's escape of an emoji) is served: {got}")
    REFUSED[400] = REFUSED.get(400, 0) + 3
    bad(s, "stop of the wrong type", {"messages": msgs, "stop": 5}, 400, "stop")
    bad(s, "an empty stop string", {"messages": msgs, "stop": ""}, 400, "stop")
    bad(s, "an empty stop string in the array", {"messages": msgs, "stop": ["x", ""]}, 400, "stop")
    bad(s, "stream not a boolean", {"messages": msgs, "stream": "yes"}, 400, "stream")
    bad(s, "logit_bias not an object", {"messages": msgs, "logit_bias": [1]}, 400, "logit_bias")
    bad(s, "a logit_bias key that is not a token id", {"messages": msgs, "logit_bias": {"abc": 1}}, 400, "logit_bias")
    bad(s, "a logit_bias token past the vocabulary", {"messages": msgs, "logit_bias": {"512": 1}}, 400, "logit_bias")
    bad(s, "a logit_bias value past 100", {"messages": msgs, "logit_bias": {"5": 101}}, 400, "logit_bias")
    bad(s, "a NUL in a message", None, 400, raw=b'{"messages": [{"role": "user", "content": "a\\u0000b"}]}')
    bad(s, "a NUL in a stop string", {"messages": msgs, "stop": ["x\u0000y"]}, 400)
    got, _, r = s.post(CHAT, {"messages": [{"role": "user", "content": "a\\u0000b"}], "max_tokens": 2})
    check(got == 200 and r["usage"]["completion_tokens"] == 2,
          f"an escaped backslash before u0000 is text, not a NUL: {got}")
    got, _, r = s.post(CHAT, {"model": "gpt-3.5-turbo", "messages": msgs, "max_tokens": 2})
    check(got == 200 and r["model"] == "test-model", f"any model name is served, the reply names the served one: {got}")
    long_text = "hello there " * (ctx * 2)
    bad(s, "a prompt longer than the context", {"messages": [{"role": "user", "content": long_text}]}, 400,
        code="context_length_exceeded")
    bad(s, "a body over --max-body", {"messages": [{"role": "user", "content": "x" * 70000}]}, 413)
    status, _, text = s.request("GET", "/v1/nothing")
    check(status == 404 and "error" in json.loads(text), "an unknown path: 404")
    REFUSED[404] = REFUSED.get(404, 0) + 1
    after = s.metrics()
    counted = {st: refused(after, st) - refused(before, st) for st in REFUSED}
    check(counted == REFUSED and set(REFUSED) >= {400, 404, 413},
          f"/metrics counts the refused requests by status: {counted}, sent {REFUSED}")


def tokenize(model, text, bos=True):
    """The prompt's tokens as the server makes them (BOS first unless bos is False), from
    `ember tokenize` (the library's tokenizer, no server)."""
    out = subprocess.run([EMBER, "tokenize", "-m", model, "-p", text, "--json"] + ([] if bos else ["--no-bos"]),
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["tokens"]


def reply(path, r):
    """The text of a non-streamed response, or of a stream's chunks."""
    if isinstance(r, list):
        return "".join(c["choices"][0]["delta"].get("content", "") if path == CHAT else c["choices"][0]["text"]
                       for c in r if c.get("choices"))
    return r["choices"][0]["message"]["content"] if path == CHAT else r["choices"][0]["text"]


def test_truncate(s, model, ctx):
    """vLLM's truncate_prompt_tokens on a prompt longer than the context: without it (or
    null) a 400 context_length_exceeded naming both numbers; with N the last N tokens are
    kept (usage.prompt_tokens == N) and the reply comes, streamed and not, on both
    endpoints; -1 keeps ctx - 1 tokens, and the reply ends at the context after 1 token."""
    long_text = "hello there " * ctx
    ids = tokenize(model, long_text)
    common = {"max_tokens": 8, "temperature": 0, "ignore_eos": True}
    for path, body, param in ((CHAT, dict(common, messages=[{"role": "user", "content": long_text}]), "messages"),
                              (CMPL, dict(common, prompt=long_text), "prompt")):
        for off in ({}, {"truncate_prompt_tokens": None}):
            status, _, r = s.post(path, dict(body, **off))
            err = r.get("error", {}) if isinstance(r, dict) else {}
            m = re.fullmatch(r"prompt of (\d+) tokens does not fit the context of (\d+)", err.get("message", ""))
            check(status == 400 and err.get("code") == "context_length_exceeded" and err.get("param") == param and
                  m is not None and int(m[1]) > ctx and int(m[2]) == ctx,
                  f"{path} {off or 'without truncate_prompt_tokens'}: {status} {err.get('message')!r}")
        at_context = 'ember_requests_finished_total{reason="context"}'
        for n, kept, n_gen in ((100, 100, 8), (-1, ctx - 1, 1)):
            before = s.metrics()
            status, _, r = s.post(path, dict(body, truncate_prompt_tokens=n))
            after = s.metrics()
            counted = after["ember_prompt_tokens_total"] - before["ember_prompt_tokens_total"]
            cut_by_context = after[at_context] - before[at_context]  # OpenAI says "length" for both
            u = r.get("usage", {}) if isinstance(r, dict) else {}
            check(status == 200 and u.get("prompt_tokens") == kept and u.get("completion_tokens") == n_gen and
                  u.get("total_tokens") == kept + n_gen and counted == kept and
                  r["choices"][0]["finish_reason"] == "length" and cut_by_context == (1 if n == -1 else 0),
                  f"{path} truncate_prompt_tokens {n}: {status}, usage {u}, /metrics counts {counted:.0f} prompt tokens "
                  f"and {cut_by_context:.0f} reply cut by the context")
            status, chunks, done = s.stream(path, dict(body, truncate_prompt_tokens=n,
                                                       stream_options={"include_usage": True}))
            su = chunks[-1].get("usage", {}) if chunks else {}
            check(status == 200 and done and su.get("prompt_tokens") == kept and su.get("completion_tokens") == n_gen
                  and reply(path, chunks) == reply(path, r),
                  f"{path} streamed, truncate_prompt_tokens {n}: {status}, usage {su}, the same "
                  f"{len(reply(path, chunks))} characters")
    # The cut is made on the tokens, BOS included: the text prompt cut to 100 is its last 100 ids.
    cut = dict(common, prompt=long_text, truncate_prompt_tokens=100)
    a, b = s.post(CMPL, cut)[2], s.post(CMPL, dict(common, prompt=ids[-100:]))[2]
    check(len(ids) > ctx and ids[0] not in ids[-100:] and reply(CMPL, a) == reply(CMPL, b) and
          a["usage"]["prompt_tokens"] == b["usage"]["prompt_tokens"] == 100,
          f"the {len(ids)}-token prompt cut to 100 is its last 100 token ids, BOS ({ids[0]}) gone: the same reply")
    short = tokenize(model, "hello there")
    a = s.post(CMPL, dict(common, prompt="hello there", truncate_prompt_tokens=100))[2]
    b = s.post(CMPL, dict(common, prompt="hello there"))[2]
    check(a["usage"]["prompt_tokens"] == len(short) and reply(CMPL, a) == reply(CMPL, b),
          f"a prompt of {len(short)} tokens under truncate_prompt_tokens 100 stays whole: "
          f"{a['usage']['prompt_tokens']} prompt tokens, the same reply")
    a = s.post(CMPL, dict(common, prompt=[5, 6, 7, 8, 9], truncate_prompt_tokens=2))[2]
    b = s.post(CMPL, dict(common, prompt=[8, 9]))[2]
    check(a["usage"]["prompt_tokens"] == 2 and reply(CMPL, a) == reply(CMPL, b),
          "token ids [5..9] cut to 2 answer as [8, 9] does")


def test_structured(s):
    """response_format (json_object, json_schema), and llama.cpp's json_schema and grammar
    fields: the replies follow them, streamed too; what Ember cannot enforce is a 400
    naming the field and the reason (docs/server.md)."""
    msgs = [{"role": "user", "content": "the guard speaks"}]
    schema = {"type": "object", "properties": {"say": {"type": "string", "maxLength": 20},
                                               "action": {"enum": ["give", "take"]}},
              "required": ["say", "action"], "additionalProperties": False}
    rf = {"type": "json_schema", "json_schema": {"name": "turn", "schema": schema, "strict": True}}
    for seed in (1, 2):
        body = {"messages": msgs, "max_tokens": 200, "temperature": 1, "seed": seed, "response_format": rf}
        status, _, r = s.post(CHAT, body)
        status2, chunks, done = s.stream(CHAT, body)
        try:
            turn = json.loads(reply(CHAT, r))
            ok = (set(turn) == {"say", "action"} and turn["action"] in ("give", "take") and len(turn["say"]) <= 20 and
                  r["choices"][0]["finish_reason"] == "stop" and reply(CHAT, chunks) == reply(CHAT, r) and done)
        except (ValueError, KeyError, TypeError):
            ok = False
        check(status == 200 and status2 == 200 and ok,
              f"response_format json_schema (seed {seed}), streamed too: {reply(CHAT, r)!r}")
    status, _, r = s.post(CHAT, {"messages": msgs, "max_tokens": 200, "temperature": 1, "seed": 3,
                                 "response_format": {"type": "json_object"}})
    try:
        ok = isinstance(json.loads(reply(CHAT, r)), dict)
    except ValueError:
        ok = False
    check(status == 200 and (ok or r["choices"][0]["finish_reason"] == "length"),
          f"response_format json_object: {reply(CHAT, r)[:80]!r}")
    status, _, r = s.post(CMPL, {"prompt": "answer:", "max_tokens": 20, "temperature": 1,
                                 "grammar": 'root ::= "yes" | "no"'})
    check(status == 200 and reply(CMPL, r) in ("yes", "no") and r["choices"][0]["finish_reason"] == "stop",
          f"grammar on a completion: {reply(CMPL, r)!r}")
    status, _, r = s.post(CMPL, {"prompt": "n:", "max_tokens": 20, "temperature": 1,
                                 "json_schema": {"type": "integer", "minimum": 10, "maximum": 99}})
    check(status == 200 and reply(CMPL, r).isdigit() and 10 <= int(reply(CMPL, r)) <= 99,
          f"json_schema on a completion: {reply(CMPL, r)!r}")
    bad(s, "response_format of an unknown type", {"messages": msgs, "response_format": {"type": "xml"}}, 400,
        "response_format")
    got, _, r = s.post(CHAT, {"messages": msgs, "response_format": {"type": "json_schema", "json_schema": {
        "name": "x", "schema": {"type": "array", "uniqueItems": True}}}})
    check(got == 400 and r["error"]["param"] == "response_format" and "uniqueItems" in r["error"]["message"],
          f"a schema keyword Ember cannot enforce: 400 naming it ({r['error']['message']!r})")
    got, _, r = s.post(CHAT, {"messages": msgs, "grammar": "root ::= [a-"})
    check(got == 400 and r["error"]["param"] == "grammar" and "line 1, column" in r["error"]["message"],
          f"a grammar with an error: 400 with its place ({r['error']['message']!r})")
    bad(s, "response_format and grammar together", {"messages": msgs, "grammar": 'root ::= "a"',
                                                     "response_format": {"type": "json_object"}}, 400)


TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.",
                                          "parameters": {"type": "object", "properties": {
                                              "city": {"type": "string", "maxLength": 12}, "unit": {"enum": ["C", "F"]}},
                                              "required": ["city"], "additionalProperties": False}}},
         {"type": "function", "function": {"name": "add", "parameters": {
             "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
             "required": ["a", "b"], "additionalProperties": False}}}]


def valid_call(call):
    """A tool call in OpenAI's shape whose arguments follow its tool's schema."""
    fn = call.get("function", {})
    try:
        args = json.loads(fn.get("arguments", ""))
    except ValueError:
        return False
    if call.get("type") != "function" or not call.get("id"):
        return False
    if fn.get("name") == "get_weather":
        return set(args) <= {"city", "unit"} and isinstance(args.get("city"), str) and len(args["city"]) <= 12 and \
            args.get("unit", "C") in ("C", "F")
    return fn.get("name") == "add" and set(args) == {"a", "b"} and all(isinstance(args[k], int) for k in args)


def test_tools(model, label):
    """OpenAI's tools on a model with room for them (a random model: the calls' shape comes
    from the grammar): tool_choice required and a named function give valid tool_calls with
    finish_reason tool_calls, streamed as a tool_calls delta too; auto gives an answer or
    valid calls; none gives text; a tool's result in the conversation is taken; bad tools
    and tools beside response_format are 400s. Run on a model without a chat template (the
    built-in way: {"tool_calls": [...]}) and on one with Qwen 2.5's (<tool_call> tags)."""
    print(f"-- tools on {label}")
    s = Server(model, "--model-name", "tools-model")
    try:
        msgs = [{"role": "user", "content": "weather in Oslo?"}]
        for i, choice in enumerate(["required", {"type": "function", "function": {"name": "add"}}]):
            # one call: a random model would go on making calls until max_tokens
            body = {"messages": msgs, "max_tokens": 200, "temperature": 1, "seed": 11 + i, "tools": TOOLS,
                    "tool_choice": choice, "parallel_tool_calls": False}
            status, _, r = s.post(CHAT, body)
            msg = r["choices"][0]["message"] if status == 200 else {}
            calls = msg.get("tool_calls") or []
            check(status == 200 and len(calls) == 1 and valid_call(calls[0]) and msg.get("content") is None and
                  r["choices"][0]["finish_reason"] == "tool_calls" and
                  (choice == "required" or all(c["function"]["name"] == "add" for c in calls)),
                  f"tool_choice {choice}: {calls}")
            status, chunks, done = s.stream(CHAT, body)
            deltas = [c["choices"][0]["delta"]["tool_calls"] for c in chunks if c.get("choices") and
                      "tool_calls" in c["choices"][0]["delta"]]
            streamed = [{k: v for k, v in c.items() if k != "index"} for d in deltas for c in d]
            check(status == 200 and done and streamed and all(valid_call(c) for c in streamed) and
                  [c["function"] for c in streamed] == [c["function"] for c in calls] and
                  chunks[-1]["choices"][0]["finish_reason"] == "tool_calls",
                  f"tool_choice {choice}, streamed: the same calls as a tool_calls delta")
        status, _, r = s.post(CHAT, {"messages": msgs, "max_tokens": 60, "temperature": 1, "seed": 3, "tools": TOOLS})
        msg = r["choices"][0]["message"]
        check(status == 200 and ((msg.get("tool_calls") and all(valid_call(c) for c in msg["tool_calls"])) or
                                 isinstance(msg.get("content"), str)),
              f"tool_choice auto: an answer or valid calls ({r['choices'][0]['finish_reason']})")
        status, _, r = s.post(CHAT, {"messages": msgs, "max_tokens": 20, "temperature": 1, "tools": TOOLS,
                                     "tool_choice": "none"})
        check(status == 200 and "tool_calls" not in r["choices"][0]["message"], "tool_choice none: text")
        history = msgs + [{"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "12 C and rain"}]
        status, _, r = s.post(CHAT, {"messages": history, "max_tokens": 20, "temperature": 0, "tools": TOOLS})
        check(status == 200, f"a conversation with a call and its result: {status}")
        bad(s, "tools that are not functions", {"messages": msgs, "tools": [{"type": "retrieval"}]}, 400, "tools")
        bad(s, "tool_choice naming no tool", {"messages": msgs, "tools": TOOLS, "tool_choice": {
            "type": "function", "function": {"name": "nope"}}}, 400, "tools")
        bad(s, "tools beside response_format", {"messages": msgs, "tools": TOOLS,
                                                "response_format": {"type": "json_object"}}, 400, "tools")
    finally:
        check(s.stop() == 0, "the tools server exits 0")


def test_api_key(model):
    s = Server(model, "--model-name", "test-model", "--api-key", "sk-secret")
    req = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    got = [s.post(CHAT, req, headers=h)[0] for h in ({}, {"Authorization": "Bearer nope"},
                                                      {"Authorization": "Bearer sk-secret"})]
    health = s.request("GET", "/health")[0]
    check(got == [401, 401, 200] and health == 200,
          f"--api-key: none {got[0]}, wrong {got[1]}, right {got[2]}; /health open ({health})")
    check(s.stop() == 0, "SIGTERM: the server exits 0")


def test_state_files(model):
    """--state-dir: /v1/state/save writes a prompt's KV state as a file of the folder; a
    second server restores it with /v1/state/restore, and the same prompt then takes its
    blocks from the prefix cache and gives the first server's greedy text. Names with
    paths or a leading dot are refused (400 naming filename), a missing file is a 404,
    a changed file a 400 naming the checksum, and without --state-dir the endpoints are
    off (404)."""
    folder = os.path.join(TMP, "server_states")
    os.makedirs(folder, exist_ok=True)
    prompt = {"prompt": "a conversation that is saved and restored in another server", "max_tokens": 8,
              "temperature": 0, "ignore_eos": True}
    a = Server(model, "--state-dir", folder)
    try:
        status, _, r = a.post("/v1/state/save", dict(prompt, filename="conv-1.state"))
        check(status == 200 and r["filename"] == "conv-1.state" and r["n_tokens"] > 8 and
              os.path.getsize(os.path.join(folder, "conv-1.state")) == r["n_bytes"],
              f"save: {status} {r}")
        n_tokens = r.get("n_tokens", 0)
        text = a.post(CMPL, prompt)[2]["choices"][0]["text"]
        for name in ("../x", "a/b", ".hidden", "", "x" * 129, 5):
            got, _, r = a.post("/v1/state/save", dict(prompt, filename=name))
            check(got == 400 and r["error"]["param"] == "filename", f"save as {name!r}: {got}")
        check(not os.path.exists(os.path.join(TMP, "x")), "nothing written outside the folder")
    finally:
        check(a.stop() == 0, "the first server exits 0")
    with open(os.path.join(folder, "conv-1.state"), "rb") as f:
        data = bytearray(f.read())
    data[len(data) // 2] ^= 0x20
    with open(os.path.join(folder, "bad.state"), "wb") as f:
        f.write(data)
    b = Server(model, "--state-dir", folder)
    try:
        hits = b.metrics()["ember_prefix_cache_hit_tokens_total"]
        status, _, r = b.post("/v1/state/restore", {"filename": "conv-1.state"})
        check(status == 200 and r["n_tokens"] == n_tokens and r["n_restored"] == n_tokens - 1, f"restore: {status} {r}")
        again = b.post(CMPL, prompt)[2]["choices"][0]["text"]
        hits = b.metrics()["ember_prefix_cache_hit_tokens_total"] - hits
        check(again == text and hits >= n_tokens - 16,
              f"the restored prompt: {hits:.0f} of {n_tokens} tokens from the cache, the first server's text")
        m = b.metrics()
        check(m['ember_kv_states_total{way="restored"}'] == 1 and
              m['ember_kv_state_restored_tokens_total'] == n_tokens - 1 and
              m['ember_kv_state_bytes_total{way="restored"}'] == os.path.getsize(os.path.join(folder, "conv-1.state")),
              "/metrics counts the restored state, its tokens and bytes")
        got, _, r = b.post("/v1/state/restore", {"filename": "missing"})
        check(got == 404 and r["error"]["code"] == "state_not_found", f"a missing file: {got}")
        got, _, r = b.post("/v1/state/restore", {"filename": "bad.state"})
        check(got == 400 and "checksum" in r["error"]["message"], f"a changed file: {got} {r}")
        check(b.post(CMPL, prompt)[2]["choices"][0]["text"] == text, "the server serves on after the refusals")
    finally:
        check(b.stop() == 0, "the second server exits 0")
    c = Server(model)
    try:
        got, _, r = c.post("/v1/state/restore", {"filename": "conv-1.state"})
        check(got == 404 and "--state-dir" in r["error"]["message"], f"without --state-dir: {got}")
    finally:
        c.stop()


class FakePeer:
    """A prefill peer that answers every request as mode says: "cut" sends a 200 promising
    100,000 bytes and closes after 500 (a peer that dies mid-transfer); "junk" sends a
    whole 200 of bytes that are not a KV state; "huge" sends 3 MiB (over the --max-state-mib
    1 of the server that asks)."""

    def __init__(self, mode):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.mode = mode
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            data = b""
            while b"\r\n\r\n" not in data:
                data += c.recv(65536)
            head, _, body = data.partition(b"\r\n\r\n")
            n = int(re.search(rb"Content-Length: (\d+)", head, re.I).group(1))
            while len(body) < n:
                body += c.recv(65536)
            if self.mode == "cut":
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"\0" * 500)
            elif self.mode == "huge":
                try:
                    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3145728\r\n\r\nEMBERKVS" + b"\0" * (3145728 - 8))
                except OSError:
                    pass  # the server hung up once it had more than it takes
            else:
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 64\r\n\r\n" + b"EMBERKVS" + b"\1" * 56)
            c.close()

    def close(self):
        self.sock.close()


def test_prefill_peer_q8():
    """--prefill-peer with a Q8_0 model: the peer's state decoded here gives one server's
    text too (test_prefill_peer runs the F32 model)."""
    model = os.path.join(TMP, "server_model_q8.gguf")
    subprocess.run([EMBER, "make-test-model", model, "--dim", "64", "--layers", "2", "--heads", "4", "--kv-heads",
                    "2", "--ffn", "128", "--vocab", "512", "--ctx", "256", "--type", "q8_0"],
                   check=True, stdout=subprocess.DEVNULL)
    prompt = {"prompt": "a long prompt that the peer prefills and this server decodes, token by token",
              "max_tokens": 8, "temperature": 0, "ignore_eos": True}
    peer = Server(model, "--serve-prefill")
    main = Server(model, "--prefill-peer", f"http://127.0.0.1:{peer.port}", "--prefill-min-tokens", "8")
    try:
        want = peer.post(CMPL, prompt)[2]["choices"][0]["text"]
        status, _, r = main.post(CMPL, prompt)
        m = main.metrics()
        check(status == 200 and r["choices"][0]["text"] == want and m['ember_prefill_peer_total{result="remote"}'] == 1
              and m["ember_kv_state_restored_tokens_total"] == r["usage"]["prompt_tokens"] - 1,
              "Q8_0: prefilled by the peer, decoded here: the same text")
    finally:
        main.stop()
        peer.stop()


def test_prefill_peer(model):
    """--prefill-peer: a prompt of at least --prefill-min-tokens tokens is prefilled by a
    peer started with --serve-prefill and decoded here, with the text one server gives (the
    restored tokens and the peer's prefill in /metrics); a shorter one is prefilled here. A
    peer that dies mid-transfer, answers bytes that are not a state, answers more bytes than
    --max-state-mib, or is gone costs only a local prefill: the same text, counted as a
    fallback. Without --serve-prefill,
    /v1/prefill is a 404."""
    prompt = {"prompt": "a long prompt that the peer prefills and this server decodes, token by token",
              "max_tokens": 8, "temperature": 0, "ignore_eos": True}
    peer = Server(model, "--serve-prefill")
    fakes = [FakePeer("cut"), FakePeer("junk"), FakePeer("huge")]
    servers = [Server(model, "--prefill-peer", f"http://127.0.0.1:{p}", "--prefill-min-tokens", "8",
                      *(["--max-state-mib", "1"] if p == fakes[2].port else []))
               for p in (peer.port, fakes[0].port, fakes[1].port, fakes[2].port)]
    try:
        want = peer.post(CMPL, prompt)[2]["choices"][0]["text"]
        main = servers[0]
        status, _, r = main.post(CMPL, prompt)
        m = main.metrics()
        check(status == 200 and r["choices"][0]["text"] == want and m['ember_prefill_peer_total{result="remote"}'] == 1
              and m["ember_kv_state_restored_tokens_total"] == r["usage"]["prompt_tokens"] - 1,
              f"prefilled by the peer, decoded here: the same text, {m['ember_kv_state_restored_tokens_total']:.0f} "
              f"tokens restored")
        _, chunks, done = main.stream(CMPL, prompt)
        streamed = "".join(c["choices"][0]["text"] for c in chunks if c.get("choices"))
        check(done and streamed == want, "streamed, the same text")
        main.post(CMPL, dict(prompt, prompt="short"))
        check(main.metrics()['ember_prefill_peer_total{result="remote"}'] == 2, "a short prompt is prefilled here")
        for server, what in ((servers[1], "dies mid-transfer"), (servers[2], "answers bytes that are no state"),
                             (servers[3], "answers a state over --max-state-mib")):
            status, _, r = server.post(CMPL, prompt)
            m = server.metrics()
            check(status == 200 and r["choices"][0]["text"] == want and
                  m['ember_prefill_peer_total{result="fallback"}'] == 1,
                  f"a peer that {what}: prefilled here, the same text, one fallback")
        got, _, r = main.post("/v1/prefill", prompt)
        check(got == 404 and "--serve-prefill" in r["error"]["message"], f"/v1/prefill without --serve-prefill: {got}")
        check(peer.stop() == 0, "the peer exits 0")
        status, _, r = main.post(CMPL, prompt)
        check(status == 200 and r["choices"][0]["text"] == want and
              main.metrics()['ember_prefill_peer_total{result="fallback"}'] == 1,
              "the peer gone: prefilled here, the same text")
    finally:
        for server in servers:
            server.stop()
        for f in fakes:
            f.close()
        peer.stop()


def test_queue_full(model):
    """One request running (of --max-seqs 1), one waiting (of --max-queue 1): the next is
    refused. The model has a long context so that the two outlast the check."""
    s = Server(model, "--model-name", "test-model", "--max-seqs", "1", "--max-queue", "1")
    hold = []
    ctx = json.loads(s.request("GET", "/v1/models")[2])["data"][0]["max_model_len"]
    for gauge in ("ember_requests_running", "ember_requests_waiting"):  # one, then the other
        sock = socket.create_connection(("127.0.0.1", s.port))
        body = json.dumps({"prompt": "hello", "max_tokens": ctx - 8, "ignore_eos": True, "stream": True})
        sock.sendall((f"POST {CMPL} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n{body}").encode())
        hold.append(sock)
        deadline = time.time() + 60
        while time.time() < deadline and s.metrics()[gauge] < 1:
            time.sleep(0.02)
        check(s.metrics()[gauge] >= 1, f"a held request shows in {gauge}")
    before = s.metrics()
    status, headers, r = s.post(CMPL, {"prompt": "hello", "max_tokens": 2})
    if status != 503:
        print("before:", {k: v for k, v in before.items() if "requests" in k}, "response:", r)
    check(status == 503 and headers.get("Retry-After") and r["error"]["code"] == "queue_full",
          f"a full queue (1 running of --max-seqs 1, 1 waiting of --max-queue 1, context {ctx}): {status}, "
          f"Retry-After {headers.get('Retry-After')}")
    for sock in hold:
        sock.close()
    s.stop()


def test_load(s):
    # Long requests (96 steps each) against arrivals a few milliseconds apart: they overlap
    # on any real device (no engine steps in microseconds), not only on a slow one.
    n_clients, per_client, spans, statuses = 16, 2, [], []
    lock = threading.Lock()
    peak = {"running": 0}
    stop = threading.Event()

    def watch():  # samples back to back: a fixed pause could miss every moment of overlap
        while not stop.is_set():
            peak["running"] = max(peak["running"], s.metrics()["ember_requests_running"])

    def client(k):
        for i in range(per_client):
            t0 = time.time()
            status, _, r = s.post(CMPL, {"prompt": f"request {k} {i}", "max_tokens": 96, "ignore_eos": True,
                                         "temperature": 0.8, "seed": k * 10 + i})
            with lock:
                spans.append((t0, time.time()))
                statuses.append(status)

    w = threading.Thread(target=watch)
    w.start()
    t0 = time.time()
    threads = [threading.Thread(target=client, args=(k,)) for k in range(n_clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.time() - t0
    stop.set()
    w.join()
    busy = sum(b - a for a, b in spans)
    check(len(statuses) == 32 and all(st == 200 for st in statuses), f"32 requests from 16 clients: all 200")
    check(busy > 4 * wall and peak["running"] >= 4,
          f"served together: {busy:.1f} s of requests in {wall:.1f} s of wall time, "
          f"up to {peak['running']:.0f} running at once")


def test_speculation(model):
    """--ngram and --draft: every request speculates; the metrics count drafts and acceptances, and
    greedy text is what it is without speculation."""
    plain = Server(model, "--model-name", "test-model")
    req = {"prompt": "one two three one two three one two three", "max_tokens": 24, "temperature": 0,
           "ignore_eos": True}
    want = plain.post(CMPL, req)[2]["choices"][0]["text"]
    plain.stop()
    s = Server(model, "--model-name", "test-model", "--ngram", "2")
    status, _, r = s.post(CMPL, req)
    m = s.metrics()
    check(status == 200 and r["choices"][0]["text"] == want and m["ember_spec_draft_tokens_total"] > 0,
          f"--ngram 2: same greedy text, {m['ember_spec_draft_tokens_total']:.0f} drafted, "
          f"{m['ember_spec_accepted_tokens_total']:.0f} accepted")
    s.stop()
    s = Server(model, "--model-name", "test-model", "--draft", model)  # the model drafts for itself
    status, _, r = s.post(CMPL, req)
    m = s.metrics()
    check(status == 200 and r["choices"][0]["text"] == want and m["ember_spec_accepted_tokens_total"] > 0 and
          m["ember_spec_accepted_tokens_total"] == m["ember_spec_draft_tokens_total"],
          f"--draft (the model itself): same greedy text, {m['ember_spec_draft_tokens_total']:.0f} drafted, "
          f"all accepted")
    s.stop()


def test_device_lost(model, stream):
    """A server whose GPU is lost (EMBER_FAULTS makes the 30th submission report it): the
    request in flight ends with an error that says so in its body (its 200 went out
    before): a streamed one gets an error event, then [DONE], as vLLM sends it, which
    OpenAI's clients raise; a non-streamed one an "error" object beside finish_reason
    "error". /health says 503 so that a load balancer takes the server out, and new
    requests get 503 device_lost; the server still exits cleanly."""
    how = "streamed" if stream else "not streamed"
    s = Server(model, "--model-name", "test-model", env=dict(os.environ, EMBER_FAULTS="submit_lost=30"))
    status, _, _ = s.request("GET", "/health")
    check(status == 200, "before the loss /health is 200")
    req = {"prompt": "one two three", "max_tokens": 64, "temperature": 0, "ignore_eos": True}
    if stream:
        status, chunks, done = s.stream(CMPL, req)
        err = chunks[-1].get("error", {}) if chunks else {}
        texts = [c for c in chunks if "choices" in c]
        check(status == 200 and done and err.get("code") == "device_lost" and "lost" in err.get("message", "") and
              len(texts) > 0 and all(c["choices"][0]["finish_reason"] is None for c in texts),
              f"{how}: the request in flight ends with an error event ({status}, last {chunks[-1:]}, [DONE] {done})")
    else:
        status, _, r = s.post(CMPL, req)
        finish = r["choices"][0].get("finish_reason") if status == 200 and isinstance(r, dict) else None
        err = r.get("error", {}) if isinstance(r, dict) else {}
        check(status == 200 and finish == "error" and err.get("code") == "device_lost" and
              err.get("type") == "server_error" and "lost" in err.get("message", ""),
              f"{how}: the request in flight ends with finish_reason error and says why ({status}, {finish}, {err})")
    status, _, text = s.request("GET", "/health")
    check(status == 503 and json.loads(text).get("status") == "device_lost", f"then /health is 503: {text}")
    status, _, r = s.post(CMPL, req)
    code = r.get("error", {}).get("code") if isinstance(r, dict) else None
    check(status == 503 and code == "device_lost", f"a new request gets 503 device_lost ({status}, {code})")
    status, _, r = s.post(EMB, {"input": ["a", "b"]})
    code = r.get("error", {}).get("code") if isinstance(r, dict) else None
    check(status == 503 and code == "device_lost", f"so does an embeddings request ({status}, {code})")
    check(s.stop() == 0, "a server whose GPU was lost exits 0 on SIGTERM")



def raw_reply(s, path, body):
    """POST body (bytes) and the reply's raw bytes, which must be UTF-8 for JSON."""
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=120)
    c.request("POST", path, body=body)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def parses(data):
    try:
        return json.loads(data.decode("utf-8")) is not None
    except ValueError:
        return False


def test_utf8(s):
    """Invalid UTF-8 never reaches JSON: a prompt's bad bytes echoed as U+FFFD, whole and
    streamed; a reply that is cut mid-character (a byte token forced by logit_bias)."""
    print("-- invalid UTF-8 and JSON")
    body = b'{"prompt": "Once \xff\xfe upon", "echo": true, "max_tokens": 3, "temperature": 0}'
    status, data = raw_reply(s, CMPL, body)
    ok = status == 200 and parses(data)
    check(ok and json.loads(data)["choices"][0]["text"].startswith("Once \ufffd\ufffd upon"),
          f"echo of invalid bytes: JSON that parses, U+FFFD for each ({data[:120]!r})")
    status, data = raw_reply(s, CMPL, body[:-1] + b', "stream": true}')
    events = [e[6:] for e in data.split(b"\n") if e.startswith(b"data: ") and e != b"data: [DONE]"]
    check(status == 200 and events and all(parses(e) for e in events) and
          json.loads(events[0])["choices"][0]["text"].startswith("Once \ufffd\ufffd upon"),
          f"streamed: every chunk parses ({len(events)} chunks)")
    # token 3 + 0xE4: the byte 0xE4, a 3-byte character's first byte, forced every step
    for stream in (False, True):
        req = {"prompt": "a", "max_tokens": 2, "temperature": 0, "logit_bias": {"231": 100}, "stream": stream}
        status, data = raw_reply(s, CMPL, json.dumps(req).encode())
        chunks = [e[6:] for e in data.split(b"\n") if e.startswith(b"data: ") and e != b"data: [DONE]"] \
            if stream else [data]
        check(status == 200 and chunks and all(parses(c) for c in chunks),
              f"a reply ending mid-character{', streamed' if stream else ''}: JSON that parses ({data[-80:]!r})")
    status, data = raw_reply(s, CHAT, b'{"model": "m\xc3", "messages": [{"role": "user", "content": "\xe4\xb8"}],'
                                      b' "max_tokens": 2}')
    check(status == 200 and parses(data), f"chat content and model name with cut characters: {status}")


def test_detokenize(s):
    """/detokenize: a NUL byte token keeps the text after it; tokenize (with BOS) then
    detokenize gives the text back."""
    status, _, r = s.post("/detokenize", {"tokens": [400, 3, 400]})
    _, _, one = s.post("/detokenize", {"tokens": [400]})
    check(status == 200 and r["content"] == one["content"] + "\u0000" + one["content"] and r["prompt"] == r["content"],
          f"/detokenize of a NUL byte token: the text goes on after it: {r!r}")
    text = "The little cat sat on the mat."
    _, _, t = s.post("/tokenize", {"prompt": text})
    _, _, d = s.post("/detokenize", {"tokens": t["tokens"]})
    check(t["tokens"][0] == 1 and d["content"] == text, f"tokenize then detokenize: the text back: {d['content']!r}")


def test_fields(s):
    """Unknown fields are ignored and listed (header, log line); known ones Ember does not
    implement (mirostat, ...) are refused by name unless they ask for nothing."""
    msgs = [{"role": "user", "content": "hi"}]
    status, headers, r = s.post(CHAT, {"messages": msgs, "max_tokens": 2, "frobnicate": 1, "cache_prompt": True})
    check(status == 200 and headers.get("X-Ember-Ignored-Fields") == "frobnicate, cache_prompt",
          f"unknown fields: served, listed in X-Ember-Ignored-Fields: {headers.get('X-Ember-Ignored-Fields')!r}")
    check(s.wait_line(r"POST /v1/chat/completions 200 .*ignored fields: frobnicate, cache_prompt") is not None,
          "and in the access log line")
    status, headers, r = s.post(CHAT, {"messages": msgs, "max_tokens": 2})
    check(status == 200 and "X-Ember-Ignored-Fields" not in headers, "no header when nothing was ignored")
    for field, value in [("mirostat", 2), ("typical_p", 0.5), ("tfs_z", 0.9), ("dry_multiplier", 0.8),
                         ("xtc_probability", 0.5), ("use_beam_search", True), ("min_tokens", 4),
                         ("guided_json", {"type": "object"})]:
        bad(s, f"{field} {value!r}", {"messages": msgs, field: value}, 400, field, "unsupported_parameter")
    status, _, r = s.post(CMPL, {"prompt": "hi", "max_tokens": 2, "mirostat": 0, "typical_p": 1, "tfs_z": 1,
                                 "min_tokens": 0})
    check(status == 200, f"the same asking for nothing (mirostat 0, typical_p 1, ...): served: {status}")


def test_access_log(s):
    """A line per request on stderr; a client that hangs up mid-stream costs one line
    ("client gone"), and none of libmicrohttpd's "Failed to send"."""
    s.request("GET", "/health")
    check(s.wait_line(r"^ember serve: GET /health 200 \d+ B [\d.]+ ms$") is not None, "access log: GET /health 200")
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=60)
    c.request("POST", CMPL, body=json.dumps({"prompt": "hello", "max_tokens": 200, "ignore_eos": True,
                                              "stream": True}))
    r = c.getresponse()
    r.fp.readline()  # the first event: then hang up
    c.sock.shutdown(socket.SHUT_RDWR)
    c.close()
    line = s.wait_line(r"POST /v1/completions 200 \d+ B [\d.]+ ms \(client gone\)")
    check(line is not None, f"a client that hung up: {line!r}")
    check(not any("Failed to send" in l for l in s.lines), "no libmicrohttpd 'Failed to send' lines")


def test_embeddings_metrics(s):
    before = s.metrics()
    key = 'ember_requests_finished_total{reason="length"}'
    status, _, _ = s.post(EMB, {"input": ["a cat", "a dog"]})
    after = s.metrics()
    check(status == 200 and after.get(key, 0) == before.get(key, 0),
          f"embeddings are not counted as finished by length: {before.get(key)} -> {after.get(key)}")


def test_required_cut(model):
    """tool_choice required with parallel calls allowed: a random model makes calls until
    max_tokens cuts it; the complete calls come back as tool_calls, never as content."""
    print("-- tool_choice required, cut by max_tokens")
    s = Server(model, "--model-name", "tools-model")
    try:
        msgs = [{"role": "user", "content": "give me a sword"}]
        tools = [{"type": "function", "function": {"name": "give_item", "parameters": {
            "type": "object", "properties": {"item": {"type": "string", "maxLength": 8}}, "required": ["item"]}}}]
        cut = 0
        for seed in range(4):
            body = {"messages": msgs, "tools": tools, "tool_choice": "required", "max_tokens": 200,
                    "temperature": 1, "seed": seed}
            status, _, r = s.post(CHAT, body)
            ch = r["choices"][0] if status == 200 else {}
            msg = ch.get("message", {})
            cut += r.get("usage", {}).get("completion_tokens") == 200
            calls = msg.get("tool_calls") or []
            check(status == 200 and calls and msg.get("content") is None and ch["finish_reason"] == "tool_calls" and
                  all(c["function"]["name"] == "give_item" and json.loads(c["function"]["arguments"]) for c in calls),
                  f"seed {seed}: {len(calls)} calls in tool_calls, content null ({msg.get('content')!r:.80})")
            status, chunks, done = s.stream(CHAT, body)
            content = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c.get("choices"))
            streamed = [t for c in chunks if c.get("choices") for t in c["choices"][0]["delta"].get("tool_calls", [])]
            check(status == 200 and done and not content and
                  [t["function"] for t in streamed] == [c["function"] for c in calls],
                  f"seed {seed}, streamed: the same calls, no content")
        check(cut > 0, f"some replies were cut by max_tokens ({cut} of 4): the case covered")
    finally:
        check(s.stop() == 0, "the server exits 0")


def test_cors(model):
    print("-- --cors-origin")
    s = Server(model)
    try:
        status, headers, _ = s.request("OPTIONS", CHAT)
        check(status != 204 and "Access-Control-Allow-Origin" not in headers, f"CORS off by default: {status}")
    finally:
        s.stop()
    s = Server(model, "--cors-origin", "https://app.example", "--api-key", "k")
    try:
        status, headers, _ = s.request("OPTIONS", CHAT, headers={
            "Origin": "https://app.example", "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type"})
        check(status == 204 and headers.get("Access-Control-Allow-Origin") == "https://app.example" and
              "POST" in headers.get("Access-Control-Allow-Methods", "") and
              headers.get("Access-Control-Allow-Headers") == "authorization, content-type",
              f"a preflight (no key): 204 with the Allow headers: {status} {headers}")
        status, headers, _ = s.post(CHAT, {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2},
                                    headers={"Authorization": "Bearer k", "Origin": "https://app.example"})
        check(status == 200 and headers.get("Access-Control-Allow-Origin") == "https://app.example",
              "a request: Access-Control-Allow-Origin")
        status, headers, _ = s.request("GET", "/v1/models")
        check(status == 401 and headers.get("Access-Control-Allow-Origin") == "https://app.example",
              "an error too (the page can read it)")
    finally:
        check(s.stop() == 0, "the CORS server exits 0")


def test_hosts(model):
    """--host localhost and IPv6 addresses."""
    print("-- --host")
    s = Server(model, "--host", "localhost")
    try:
        status, _, _ = s.request("GET", "/health")
        check(status == 200, "--host localhost serves on 127.0.0.1")
    finally:
        s.stop()
    try:
        probe = socket.socket(socket.AF_INET6)
        probe.bind(("::1", 0))
        probe.close()
    except OSError:
        print("SKIP: no IPv6 loopback here")
        return
    for host, reach in (("::1", "::1"), ("::", "127.0.0.1")):
        s = Server(model, "--host", host, host=reach)
        try:
            status, _, _ = s.request("GET", "/health")
            check(status == 200, f"--host {host}: reached on {reach}")
        finally:
            s.stop()


def test_sigterm_streams(model):
    """SIGTERM while streams are live: each ends with an error event and [DONE], then the
    server exits 0, within a bound. A 4096-token context: the replies of 4000 tokens are
    still running when the signal comes, on any device."""
    print("-- SIGTERM with live streams")
    s = Server(model)
    conns = []
    for _ in range(3):
        c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=60)
        c.request("POST", CMPL, body=json.dumps({"prompt": "hello", "max_tokens": 4000, "ignore_eos": True,
                                                  "stream": True}))
        r = c.getresponse()
        r.readline()  # a first event: the stream is live
        conns.append((c, r))
    t0 = time.time()
    s.p.send_signal(signal.SIGTERM)
    for i, (c, r) in enumerate(conns):
        rest = r.read().decode()
        events = [l[6:] for l in rest.split("\n") if l.startswith("data: ")]
        err = [json.loads(e) for e in events if e != "[DONE]" and "error" in json.loads(e)]
        check(events and events[-1] == "[DONE]" and err and err[-1]["error"]["code"] == "shutting_down",
              f"stream {i}: an error event (shutting_down), then [DONE]")
        c.close()
    code = s.p.wait(timeout=30)
    check(code == 0 and time.time() - t0 < 20, f"the server exits 0 ({code}) in {time.time() - t0:.1f} s")


def test_ctx_size(model):
    """-c N: every request's context is N (llama.cpp's --ctx-size)."""
    print("-- -c / --ctx-size")
    s = Server(model, "-c", "64")
    try:
        _, _, m = s.request("GET", "/v1/models")
        check(json.loads(m)["data"][0]["max_model_len"] == 64, "/v1/models: max_model_len 64")
        status, _, r = s.post(CMPL, {"prompt": "hello", "ignore_eos": True, "temperature": 0})
        u = r.get("usage", {})
        check(status == 200 and u["prompt_tokens"] + u["completion_tokens"] == 64 and
              r["choices"][0]["finish_reason"] == "length", f"a reply ends where the context of 64 is full: {u}")
        status, _, r = s.post(CMPL, {"prompt": "hello there " * 40})
        check(status == 400 and r["error"]["code"] == "context_length_exceeded", "a prompt past 64: refused")
    finally:
        check(s.stop() == 0, "the -c server exits 0")
    out = subprocess.run([EMBER, "serve", "--help"], capture_output=True, text=True).stdout
    check("--ctx-size" in out and "temperature 1" in out and "default 8080" in out and "--served-model-name" in out,
          "serve --help: -c/--ctx-size, the defaults, temperature 1")

def main():
    model = os.path.join(TMP, "server_model.gguf")
    ctx = 256
    subprocess.run([EMBER, "make-test-model", model, "--dim", "64", "--layers", "2", "--heads", "4",
                    "--kv-heads", "2", "--ffn", "128", "--vocab", "512", "--ctx", str(ctx)],
                   check=True, stdout=subprocess.DEVNULL)
    s = Server(model, "--model-name", "test-model", "--max-body", "65536")
    try:
        test_basic(s)
        test_tokens(s, model, ctx)
        test_embeddings(s, 64)
        test_logprobs(s, model)
        test_stop_and_seed(s)
        test_samples(s)
        test_logit_bias(s)
        test_metric_names(s)
        test_loopback_only(s)
        test_disconnect(s)
        test_bad_input(s, ctx)
        test_truncate(s, model, ctx)
        test_structured(s)
        test_load(s)
        test_utf8(s)
        test_detokenize(s)
        test_fields(s)
        test_access_log(s)
        test_embeddings_metrics(s)
    finally:
        code = s.stop()
    check(code == 0, "the server exits 0 on SIGTERM")
    test_cors(model)
    test_hosts(model)
    test_ctx_size(model)
    test_api_key(model)
    test_state_files(model)
    test_prefill_peer(model)
    test_prefill_peer_q8()
    test_embeddings_reranker()
    test_speculation(model)
    test_device_lost(model, stream=False)
    test_device_lost(model, stream=True)
    long_model = os.path.join(TMP, "server_model_long.gguf")
    subprocess.run([EMBER, "make-test-model", long_model, "--dim", "64", "--layers", "2", "--heads", "4",
                    "--kv-heads", "2", "--ffn", "128", "--vocab", "512", "--ctx", "4096"],
                   check=True, stdout=subprocess.DEVNULL)
    test_queue_full(long_model)
    test_tools(long_model, "a model without a chat template")
    test_required_cut(long_model)
    test_sigterm_streams(long_model)
    qwen_model = os.path.join(TMP, "server_model_qwen.gguf")
    subprocess.run([EMBER, "make-test-model", qwen_model, "--dim", "64", "--layers", "2", "--heads", "4",
                    "--kv-heads", "2", "--ffn", "128", "--vocab", "512", "--ctx", "4096", "--chat-template",
                    os.path.join(SRC, "tests", "data", "chat_templates", "Qwen-Qwen2.5-7B-Instruct.jinja")],
                   check=True, stdout=subprocess.DEVNULL)
    test_tools(qwen_model, "a model with Qwen 2.5's template")
    print(f"test_server: {'all checks passed' if failures == 0 else f'{failures} check(s) failed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
