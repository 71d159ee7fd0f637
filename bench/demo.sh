#!/usr/bin/env bash
# ember-chat's frame times and throughput (docs/ember-chat.md): three panels generating at
# once, headless under Xvfb, with the engine driven the three ways the demo offers: the
# frame budget (ember_engine_run_for with what the frame has left; the default), a worker
# thread (--threaded, ember_engine_start) and one blocking ember_engine_step per frame
# (--blocking, the baseline). Models: stories260K (when ../shared has it) and a Q8_0 test
# model of dim 256 and 3 layers. Runs are interleaved (run r of every case before run
# r + 1 of any), and the table gives the median of RUNS runs with the smallest and largest.
#   bench/demo.sh [RUNS]          (default 5)
# Environment: BUILD (build directory, default build), N (tokens per reply, default 96).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
BUILD=${BUILD:-build}
N=${N:-96}
CHAT=$BUILD/demo/ember-chat
EMBER=$BUILD/ember
[ -x "$CHAT" ] && [ -x "$EMBER" ] || { echo "build first: cmake --build $BUILD --target ember ember-chat" >&2; exit 1; }
command -v xvfb-run >/dev/null || { echo "xvfb-run is missing (scripts/setup.sh)" >&2; exit 1; }

Q8=$BUILD/bench-demo-q8_0.gguf
[ -f "$Q8" ] || "$EMBER" make-test-model "$Q8" --dim 256 --layers 3 --heads 8 --kv-heads 4 --ffn 512 --vocab 1024 \
  --type q8_0 >/dev/null
models=()
stories=../shared/models/stories260K/stories260K-f32.v3.gguf
if [ -f "$stories" ]; then models+=("stories260K=$stories"); else echo "no $stories: stories260K skipped" >&2; fi
models+=("q8_0-dim256-3L=$Q8")
modes=("frame-budget=" "threaded=--threaded" "blocking=--blocking")

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "bench/demo.sh: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')," \
     "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
cmd=("$CHAT" --panels 3 --characters demo/characters.json --say "Tell me a story." -n "$N" --quit-after-reply)
printf -v shown '%q ' "${cmd[@]}"
echo "each run: xvfb-run -a -s '-screen 0 1280x720x24' ${shown}-m MODEL [MODE]"
for r in $(seq "$RUNS"); do
  for m in "${models[@]}"; do
    for mode in "${modes[@]}"; do
      flag=${mode#*=}
      line=$(xvfb-run -a -s "-screen 0 1280x720x24" "${cmd[@]}" -m "${m#*=}" $flag 2>/dev/null | tail -1)
      echo "$line" >> "$out/${m%%=*} ${mode%%=*}"
      echo "run $r ${m%%=*} ${mode%%=*}: $line" >&2
    done
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$out" "$RUNS" <<'PY'
import json, os, statistics, sys
out, runs = sys.argv[1], sys.argv[2]
print()
print("| model | mode | frame ms p99 | frame ms p50 | fps | tok/s (all panels) |")
print("|---|---|---|---|---|---|")
def cell(xs, fmt):
    return (fmt + " (" + fmt + "-" + fmt + ")") % (statistics.median(xs), min(xs), max(xs))
order = ["frame-budget", "threaded", "blocking"]
for name in sorted(os.listdir(out), key=lambda n: (n.split()[0], order.index(n.split()[1]))):
    rows = [json.loads(l) for l in open(os.path.join(out, name)) if l.strip().startswith("{")]
    if not rows:
        print("| %s | %s | (no result) | | | |" % tuple(name.split()))
        continue
    model, mode = name.split()
    print("| %s | %s | %s | %s | %s | %s |" % (model, mode, cell([r["frame_ms_p99"] for r in rows], "%.1f"),
          cell([r["frame_ms_p50"] for r in rows], "%.1f"), cell([r["fps_mean"] for r in rows], "%.1f"),
          cell([r["tok_s"] for r in rows], "%.0f")))
print()
print("median of %s runs (smallest-largest); frame time = start to start of the next frame, every frame after the model loaded" % runs)
PY
