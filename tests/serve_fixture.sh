# serve_fixture.sh — sourced by the test scripts that start `ember serve --port 0`.
#
#   serve_port PID LOG   waits until the server started as PID says "listening on
#                        http://127.0.0.1:PORT" in LOG (its stderr) and /health answers;
#                        prints PORT. Fails (status 1, the reason and LOG on stdout) if
#                        the server exits first or takes over 60 s (a model load under
#                        the validation layer on a busy machine).
serve_port() {
  local pid=$1 log=$2 port=
  for _ in $(seq 600); do
    port=$(sed -n 's|^ember serve: .* listening on http://127\.0\.0\.1:\([0-9][0-9]*\)$|\1|p' "$log")
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$port" ]; then
    echo "FAIL: ember serve ($log) did not start listening"; sed 's/^/  serve: /' "$log"; return 1
  fi
  for _ in $(seq 100); do
    curl -sf --max-time 2 "http://127.0.0.1:$port/health" >/dev/null && break
    sleep 0.1
  done
  if ! curl -sf --max-time 2 "http://127.0.0.1:$port/health" >/dev/null; then
    echo "FAIL: ember serve on port $port: /health does not answer"; sed 's/^/  serve: /' "$log"; return 1
  fi
  echo "$port"
}
