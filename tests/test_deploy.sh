#!/usr/bin/env bash
# test_deploy.sh — docs/deploy.md's layout on loopback: two `ember serve` instances (one
# model, --model-name same-model; a third, always full, for the retry check) behind nginx,
# with docs/deploy.md's proxy settings; nginx runs as the current user with every path
# inside a prefix under $EMBER_TEST_TMP.
#  - least_conn: 32 completions (16 at a time, ignore_eos, 8 tokens each) all answer 200,
#    both instances serve some, and their ember_generation_tokens_total (read from each
#    instance's /metrics, not through nginx) add up to 32 * 8 = 256;
#  - a stream through the proxy arrives whole, ending in [DONE], and as it is generated
#    (the first chunk long before the last);
#  - /health through the proxy, /metrics not (404: scraped per instance); 401 without the
#    key (the Authorization header passes through nginx);
#  - a client that hangs up mid-stream: nginx closes the upstream connection and the
#    instance cancels the request (it stops generating);
#  - hash $http_x_prefix_key consistent: 8 requests with one X-Prefix-Key all land on the
#    same instance, whose prefix cache then serves the repeated prompt;
#  - proxy_next_upstream http_503 non_idempotent: a third instance whose queue is always
#    full (--max-queue 0) answers 503 with Retry-After, and nginx retries the POST on the
#    next instance, so the client sees 200.
# Skips when nginx is not installed.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/serve_fixture.sh"
tmp=${EMBER_TEST_TMP:-/tmp}/deploy
nginx_bin=$(command -v nginx || true)
[ -z "$nginx_bin" ] && [ -x /usr/sbin/nginx ] && nginx_bin=/usr/sbin/nginx
if [ -z "$nginx_bin" ]; then
  echo "SKIP: nginx is not installed (apt-get install nginx-light)"; exit 77
fi
rm -rf "$tmp"
mkdir -p "$tmp/nginx/logs"
prefix=$tmp/nginx
key=sk-deploy
pids=()
nginx_pid=
cleanup() {
  if [ -n "$nginx_pid" ] && kill -0 "$nginx_pid" 2>/dev/null; then
    kill -TERM "$nginx_pid" 2>/dev/null || true  # the master stops its workers
    for _ in $(seq 50); do kill -0 "$nginx_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$nginx_pid" 2>/dev/null || true
  fi
  for p in "${pids[@]}"; do
    if kill -0 "$p" 2>/dev/null; then kill -KILL "$p" 2>/dev/null || true; fi
  done
}
trap cleanup EXIT

passed=0 failed=0
ok() { echo "ok   $*"; passed=$((passed + 1)); }
bad() { echo "FAIL $*"; failed=$((failed + 1)); }

# ---- three instances: 0 and 1 serve, 2 refuses everything (queue "full") ------------------
model=$tmp/deploy.gguf
"$EMBER_BIN" make-test-model "$model" --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 128 --vocab 512 \
  --ctx 1024 >/dev/null
ports=()
for i in 0 1 2; do
  extra=()
  [ "$i" -eq 2 ] && extra=(--max-queue 0)
  "$EMBER_BIN" serve -m "$model" --port 0 --api-key "$key" --model-name same-model "${extra[@]}" \
    >"$tmp/serve$i.out" 2>"$tmp/serve$i.err" &
  pids+=($!)
done
for i in 0 1 2; do
  port=$(serve_port "${pids[$i]}" "$tmp/serve$i.err") || { echo "instance $i: $port"; exit 1; }
  ports+=("$port")
done
echo "instances on ports ${ports[*]}"

# ---- nginx ------------------------------------------------------------------------------------
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
write_conf() { # write_conf PORT
  cat >"$prefix/nginx.conf" <<EOF
# Written by tests/test_deploy.sh: docs/deploy.md's configuration, on loopback.
worker_processes 2;
error_log $prefix/logs/error.log warn;
events { worker_connections 1024; }
http {
  log_format upstream '\$remote_addr [\$time_local] "\$request" \$status upstream=\$upstream_addr '
                      'upstream_status=\$upstream_status request_time=\$request_time';
  access_log $prefix/logs/access.log upstream;
  client_body_temp_path $prefix/client_body;
  proxy_temp_path $prefix/proxy;
  fastcgi_temp_path $prefix/fastcgi;
  uwsgi_temp_path $prefix/uwsgi;
  scgi_temp_path $prefix/scgi;

  upstream ember {
    least_conn;
    server 127.0.0.1:${ports[0]} max_fails=3 fail_timeout=10s;
    server 127.0.0.1:${ports[1]} max_fails=3 fail_timeout=10s;
    keepalive 32;
  }
  upstream ember_by_prefix {
    hash \$http_x_prefix_key consistent;
    server 127.0.0.1:${ports[0]};
    server 127.0.0.1:${ports[1]};
    keepalive 32;
  }
  upstream ember_retry {  # the full instance first, then one that serves
    server 127.0.0.1:${ports[2]};
    server 127.0.0.1:${ports[0]};
  }
  map \$http_x_prefix_key \$ember_pool {
    default ember_by_prefix;
    ""      ember;
  }

  server {
    listen 127.0.0.1:$1;
    client_max_body_size 2m;

    proxy_http_version 1.1;
    proxy_set_header Connection "";
    proxy_set_header Host \$host;
    proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
    proxy_buffering off;
    proxy_cache off;
    proxy_connect_timeout 5s;
    proxy_read_timeout 600s;
    proxy_send_timeout 600s;
    proxy_next_upstream error http_503 non_idempotent;
    proxy_next_upstream_tries 2;

    location /v1/ {
      proxy_pass http://\$ember_pool;
    }
    location = /health {
      proxy_pass http://ember;
    }
    location = /metrics {
      return 404;
    }
    location / {
      return 404;
    }
    location /retry/ {  # the test's own: the full instance, then a serving one
      proxy_pass http://ember_retry/;
    }
  }
}
EOF
}
nport=
for _ in 1 2 3; do  # a free port can be taken between the check and nginx's bind
  nport=$(free_port)
  write_conf "$nport"
  "$nginx_bin" -t -q -c "$prefix/nginx.conf" -p "$prefix" -e "$prefix/logs/error.log" \
    -g "daemon off; pid $prefix/nginx.pid;" || { echo "FAIL: nginx -t"; cat "$prefix/logs/error.log"; exit 1; }
  "$nginx_bin" -c "$prefix/nginx.conf" -p "$prefix" -e "$prefix/logs/error.log" \
    -g "daemon off; pid $prefix/nginx.pid;" >"$prefix/logs/stdout.log" 2>&1 &
  nginx_pid=$!
  up=
  for _ in $(seq 50); do
    kill -0 "$nginx_pid" 2>/dev/null || break
    curl -s --max-time 2 -o /dev/null "http://127.0.0.1:$nport/health" && { up=1; break; }
    sleep 0.1
  done
  [ -n "$up" ] && break
  wait "$nginx_pid" 2>/dev/null || true
  nginx_pid=
done
if [ -z "$nginx_pid" ]; then
  echo "FAIL: nginx did not start"; cat "$prefix/logs/error.log" "$prefix/logs/stdout.log"; exit 1
fi
echo "nginx on port $nport"
base=http://127.0.0.1:$nport

# ---- checks -----------------------------------------------------------------------------------
metric() { # metric PORT NAME: a value from the instance's /metrics, -1 when unreadable
  local v
  v=$(curl -sf --max-time 5 "http://127.0.0.1:$1/metrics" | awk -v n="$2" '$1 == n { print $2 }' || true)
  echo "${v:--1}"
}
generated() { metric "$1" ember_generation_tokens_total; }

if [ "$(curl -s --max-time 5 "$base/health")" = '{"status":"ok"}' ]; then ok "/health through nginx"
else bad "/health through nginx"; fi

code=$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' "$base/metrics" || true)
if [ "$code" = 404 ]; then ok "/metrics is not served through nginx (404)"
else bad "/metrics through nginx: $code, want 404"; fi

code=$(curl -s --max-time 10 -o "$tmp/noauth.json" -w '%{http_code}' "$base/v1/completions" \
  -H 'Content-Type: application/json' -d '{"prompt":"hello","max_tokens":8}' || true)
if [ "$code" = 401 ]; then ok "no API key: 401 through nginx"
else bad "no API key: got $code $(cat "$tmp/noauth.json"), want 401"; fi

# 32 requests, 16 at a time.
python3 - "$base" "$key" >"$tmp/load.out" 2>&1 <<'EOF' || true
import concurrent.futures, json, sys, urllib.error, urllib.request
base, key = sys.argv[1], sys.argv[2]
body = json.dumps({"model": "same-model", "prompt": "hello", "max_tokens": 8, "temperature": 0,
                   "ignore_eos": True}).encode()
def one(i):
    rq = urllib.request.Request(base + "/v1/completions", data=body, method="POST",
                                headers={"Content-Type": "application/json", "Authorization": "Bearer " + key})
    try:
        with urllib.request.urlopen(rq, timeout=60) as r:
            j = json.loads(r.read())
            return r.status, j["usage"]["completion_tokens"], j["choices"][0]["finish_reason"]
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")[:200], None
    except Exception as e:
        return None, repr(e)[:200], None
with concurrent.futures.ThreadPoolExecutor(16) as ex:
    results = list(ex.map(one, range(32)))
for status, a, b in results:
    print(status, a, b)
EOF
n200=$(grep -c '^200 8 length$' "$tmp/load.out" || true)
if [ "$n200" -eq 32 ]; then ok "32 requests through nginx (16 concurrent): all 200, 8 tokens, finish_reason length"
else bad "32 requests through nginx: $n200 of 32 answered 200 with 8 tokens:"; sed 's/^/  /' "$tmp/load.out" | sort | uniq -c; fi

g0=$(generated "${ports[0]}") g1=$(generated "${ports[1]}")
echo "ember_generation_tokens_total: instance 0 ${g0:-?}, instance 1 ${g1:-?}"
if [ "${g0:-0}" -gt 0 ] && [ "${g1:-0}" -gt 0 ]; then ok "least_conn: both instances served ($g0 + $g1 tokens)"
else bad "least_conn: an instance served nothing ($g0, $g1)"; fi
if [ $((${g0:-0} + ${g1:-0})) -eq 256 ]; then ok "the instances generated 32 * 8 = 256 tokens in all"
else bad "the instances generated $((${g0:-0} + ${g1:-0})) tokens in all, want 256"; fi

# A stream through the proxy.
curl -sN --max-time 30 "$base/v1/chat/completions" -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
  -d '{"model":"same-model","messages":[{"role":"user","content":"hello"}],"max_tokens":32,"ignore_eos":true,"stream":true}' \
  >"$tmp/stream.txt" || true
nchunks=$(grep -c '^data: {' "$tmp/stream.txt" || true)
if [ "$(grep '^data: ' "$tmp/stream.txt" | tail -n 1)" = "data: [DONE]" ] && grep -q '"finish_reason":"length"' "$tmp/stream.txt"; then
  ok "a chat stream through nginx: $nchunks chunks, finish_reason length, then [DONE]"
else bad "a chat stream through nginx:"; head -c 2000 "$tmp/stream.txt" | sed 's/^/  /'; fi

# A long stream arrives as it is generated: the first chunk long before the last. (This
# nginx passed small chunks on at once even with proxy_buffering on, so the check guards
# the whole chain rather than that one directive.)
python3 - "$base" "$key" >"$tmp/timing.out" 2>&1 <<'EOF' || true
import json, sys, time, urllib.request
base, key = sys.argv[1], sys.argv[2]
body = json.dumps({"prompt": "hello", "max_tokens": 600, "ignore_eos": True, "stream": True}).encode()
rq = urllib.request.Request(base + "/v1/completions", data=body, method="POST",
                            headers={"Content-Type": "application/json", "Authorization": "Bearer " + key})
t0 = time.monotonic()
first, n, last = None, 0, b""
with urllib.request.urlopen(rq, timeout=60) as r:
    for line in r:
        if line.startswith(b"data: {"):
            n += 1
            if first is None:
                first = time.monotonic() - t0
        if line.startswith(b"data: "):
            last = line.strip()
total = time.monotonic() - t0
print(f"chunks {n} first {first or total:.3f} total {total:.3f} last {last.decode()}")
EOF
re='^chunks ([0-9]+) first ([0-9.]+) total ([0-9.]+) last data: \[DONE\]$'
line=$(tail -n 1 "$tmp/timing.out")
if [[ $line =~ $re ]] && [ "${BASH_REMATCH[1]}" -ge 100 ] &&
   python3 -c "import sys; sys.exit(not float(sys.argv[1]) < 0.5 * float(sys.argv[2]))" "${BASH_REMATCH[2]}" "${BASH_REMATCH[3]}"; then
  ok "a stream through nginx arrives as generated: the first of ${BASH_REMATCH[1]} chunks after ${BASH_REMATCH[2]} s, the last after ${BASH_REMATCH[3]} s"
else bad "streaming through nginx: $(cat "$tmp/timing.out")"; fi

# A client that hangs up mid-stream (after about 0.3 s of up to 1000 tokens).
g0=$(generated "${ports[0]}") g1=$(generated "${ports[1]}")
curl -sN --max-time 0.3 "$base/v1/completions" -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
  -d '{"prompt":"hello","max_tokens":1000,"ignore_eos":true,"stream":true}' >"$tmp/cut.txt" || true
running=
for _ in $(seq 50); do  # 5 s for the cancellation to show
  r0=$(metric "${ports[0]}" ember_requests_running) r1=$(metric "${ports[1]}" ember_requests_running)
  [ "$r0:$r1" = "0:0" ] && { running=0; break; }
  sleep 0.1
done
d=$(($(generated "${ports[0]}") - g0 + $(generated "${ports[1]}") - g1))
if [ "$running" = 0 ] && [ "$d" -gt 0 ] && [ "$d" -lt 1000 ]; then
  ok "a client hanging up mid-stream through nginx: the request was cancelled after $d of 1000 tokens"
else bad "a client hanging up mid-stream: requests_running ${r0:-?}, ${r1:-?}; $d of 1000 tokens generated"; fi

# Prefix-keyed routing: one X-Prefix-Key, one instance, whose prefix cache then serves the
# shared prompt.
g0=$(generated "${ports[0]}") g1=$(generated "${ports[1]}")
h0=$(metric "${ports[0]}" ember_prefix_cache_hit_tokens_total) h1=$(metric "${ports[1]}" ember_prefix_cache_hit_tokens_total)
codes=
for i in $(seq 8); do
  codes+=$(curl -s --max-time 30 -o /dev/null -w '%{http_code} ' "$base/v1/completions" -H "Authorization: Bearer $key" \
    -H 'Content-Type: application/json' -H 'X-Prefix-Key: 3f2a9c' \
    -d '{"prompt":"You are a helpful assistant. hello","max_tokens":8,"ignore_eos":true}' || true)
done
d0=$(($(generated "${ports[0]}") - g0)) d1=$(($(generated "${ports[1]}") - g1))
if [ "$codes" = "200 200 200 200 200 200 200 200 " ] && { [ "$d0:$d1" = "64:0" ] || [ "$d0:$d1" = "0:64" ]; }; then
  ok "hash \$http_x_prefix_key consistent: 8 requests with one key all on one instance ($d0, $d1 tokens)"
else bad "X-Prefix-Key routing: codes '$codes', tokens per instance $d0, $d1 (want 64 on one, 0 on the other)"; fi
hits=$(($(metric "${ports[0]}" ember_prefix_cache_hit_tokens_total) - h0 + $(metric "${ports[1]}" ember_prefix_cache_hit_tokens_total) - h1))
if [ "$hits" -gt 0 ]; then ok "the 8 requests with one key took $hits prompt tokens from the prefix cache"
else bad "the 8 requests with one key took no prompt tokens from the prefix cache"; fi

# 503 from a full instance: Retry-After, and nginx retries the POST on the next instance.
hdrs=$(curl -s --max-time 10 -D - -o "$tmp/full.json" "http://127.0.0.1:${ports[2]}/v1/completions" \
  -H "Authorization: Bearer $key" -d '{"prompt":"hello","max_tokens":8}' | tr -d '\r' || true)
if grep -q '^HTTP/1.1 503' <<<"$hdrs" && grep -qi '^Retry-After: 1$' <<<"$hdrs" && grep -q '"code":"queue_full"' "$tmp/full.json"; then
  ok "a full queue: 503, Retry-After: 1, code queue_full"
else bad "a full queue: got $(head -n 1 <<<"$hdrs") $(cat "$tmp/full.json")"; fi
codes=
for i in $(seq 4); do
  codes+=$(curl -s --max-time 30 -o /dev/null -w '%{http_code} ' "$base/retry/v1/completions" \
    -H "Authorization: Bearer $key" -d '{"prompt":"hello","max_tokens":8}' || true)
done
retried=$(grep -c 'POST /retry/.* 200 upstream=.* upstream_status=503, 200 ' "$prefix/logs/access.log" || true)
if [ "$codes" = "200 200 200 200 " ] && [ "$retried" -ge 1 ]; then
  ok "proxy_next_upstream http_503 non_idempotent: 4 of 4 answered 200, $retried after a 503 from the full instance"
else bad "retry on 503: codes '$codes', $retried retried"; grep 'POST /retry/' "$prefix/logs/access.log" | sed 's/^/  /'; fi
if [ "$(generated "${ports[2]}")" = 0 ]; then ok "the full instance generated nothing"
else bad "the full instance generated $(generated "${ports[2]}") tokens"; fi

# ---- stop -------------------------------------------------------------------------------------
kill -TERM "$nginx_pid"
for _ in $(seq 50); do kill -0 "$nginx_pid" 2>/dev/null || break; sleep 0.1; done
wait "$nginx_pid" 2>/dev/null || true
nginx_pid=
for i in 0 1 2; do
  kill -TERM "${pids[$i]}"
  rc=0
  for _ in $(seq 150); do kill -0 "${pids[$i]}" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "${pids[$i]}" 2>/dev/null; then bad "instance $i still runs 15 s after SIGTERM"; continue; fi
  wait "${pids[$i]}" || rc=$?
  if [ "$rc" -eq 0 ]; then ok "instance $i exits 0 on SIGTERM"
  else bad "instance $i exited $rc on SIGTERM"; sed "s/^/  serve$i: /" "$tmp/serve$i.err"; fi
done
if grep -E '\[(error|crit|alert|emerg)\]' "$prefix/logs/error.log" >/dev/null; then
  bad "nginx logged errors:"; grep -E '\[(error|crit|alert|emerg)\]' "$prefix/logs/error.log" | head -n 10 | sed 's/^/  /'
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
