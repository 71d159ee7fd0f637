#!/usr/bin/env bash
# test_bench_url.sh — `ember bench --url` against `ember serve`: a test model is served on
# a free port, the bench sends 16 streamed requests (8 at a time) and must see all of
# them complete, none fail, and as many tokens as the server's /metrics counted and as
# the in-process bench of the same workload generates. Also: a server that is not there
# is a clear error, and the server stops cleanly on SIGTERM.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/serve_fixture.sh"
if ! command -v curl >/dev/null; then
  echo "SKIP: curl not installed (apt-get install curl)"; exit 77
fi
tmp=${EMBER_TEST_TMP:-/tmp}
model=$tmp/bench_url.gguf
log=$tmp/bench_url_serve.log
"$EMBER_BIN" make-test-model "$model" --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 128 --vocab 512 \
  --ctx 256 >/dev/null || exit 1
workload=(--requests 16 --rate inf --concurrency 8 --prompt-len 8:40 --gen-len 8:24)

"$EMBER_BIN" serve -m "$model" --port 0 2>"$log" &
server=$!
trap 'kill "$server" 2>/dev/null' EXIT
fail() { echo "FAIL: $*"; echo "--- server log:"; cat "$log"; exit 1; }

port=$(serve_port "$server" "$log") || { echo "$port"; exit 1; }
url=http://127.0.0.1:$port

out=$("$EMBER_BIN" bench --url "$url" "${workload[@]}" --json) || fail "ember bench --url exited $?: $out"
echo "bench --url: $out"
metrics=$(curl -sf "$url/metrics") || fail "GET $url/metrics"
served=$(awk '$1 == "ember_generation_tokens_total" {print $2}' <<<"$metrics")
local_out=$("$EMBER_BIN" bench -m "$model" "${workload[@]}" --json) || fail "in-process ember bench exited $?"
python3 - "$out" "$served" "$local_out" <<'EOF' || fail "the figures above"
import json, sys
r, served, local = json.loads(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3])
print(f"completed {r['completed']}/{r['requests']}, failed {r['failed']}, output_tokens {r['output_tokens']} "
      f"(server counted {served}, in-process bench {local['output_tokens']}), "
      f"{r['throughput_tok_s']:.1f} tok/s, TTFT p50 {r['ttft_ms']['p50']:.2f} ms, "
      f"TPOT p50 {r['tpot_ms']['p50']:.2f} ms, ITL p50 {r['itl_ms']['p50']:.2f} ms, "
      f"goodput {r['goodput_req_s']:.2f} req/s")
problems = []
if r["completed"] != 16 or r["failed"] != 0: problems.append("want 16 completed, 0 failed")
if not 0 < r["output_tokens"] == served == local["output_tokens"]:
    problems.append("want output_tokens > 0, equal to the server's and the in-process bench's count")
if not isinstance(r.get("goodput_req_s"), (int, float)) or r["goodput_req_s"] <= 0: problems.append("want goodput_req_s > 0")
for k in ("ttft_ms", "tpot_ms", "itl_ms"):  # two events read together are 0 ms apart
    if not 0 <= r[k]["p50"] <= r[k]["p90"] <= r[k]["p99"] or r[k]["p99"] <= 0:
        problems.append(f"want 0 <= p50 <= p90 <= p99, p99 > 0 in {k}")
for p in problems: print("FAIL:", p)
sys.exit(1 if problems else 0)
EOF

# A port nobody listens on: the clear message, exit 1.
gone=$("$EMBER_BIN" bench --url http://127.0.0.1:1 --requests 1 2>&1)
rc=$?
grep -q "^ember bench: cannot reach http://127.0.0.1:1: " <<<"$gone" && [ "$rc" -eq 1 ] ||
  fail "bench against a closed port: exit $rc, '$gone' (want exit 1, 'ember bench: cannot reach ...')"
echo "closed port: $gone"

kill -TERM "$server"
wait "$server"
rc=$?
trap - EXIT
[ "$rc" -eq 0 ] || fail "ember serve exited $rc on SIGTERM (want 0)"
echo "test_bench_url: ok"
