#!/usr/bin/env bash
# Builds and runs one libFuzzer target of fuzz/ (docs/reliability.md, "Fuzzing").
#   scripts/fuzz.sh --list                 the targets, one per line
#   scripts/fuzz.sh TARGET SECONDS [ARG...] build TARGET (clang, ASan, UBSan) and fuzz it
#                                          for SECONDS; ARGs go to libFuzzer
# Its own build folder ($FUZZ_BUILD_DIR, default build-fuzz), configured with
# EMBER_FUZZ=ON. The corpus grows in build-fuzz/corpus/TARGET, starting from the seeds
# (scripts/fuzz-seeds.sh, into build-fuzz/seeds) and fuzz/regressions/TARGET, which are
# run first. Exits non-zero on a finding (a crash, a broken invariant, a leak, a
# timeout, running out of memory) and says where the input that caused it is; copy it
# into fuzz/regressions/TARGET once fixed. The machine is shared: run it under nice.
set -euo pipefail
cd "$(dirname "$0")/.."

targets() { for f in fuzz/fuzz_*.c; do basename "$f" .c | sed 's/^fuzz_//'; done; }

if [ "${1:-}" = "--list" ]; then
  targets
  exit 0
fi
if [ $# -lt 2 ] || ! [[ $2 =~ ^[1-9][0-9]*$ ]]; then  # libFuzzer reads 0 s as "no limit"
  echo "usage: $0 --list | TARGET SECONDS [libFuzzer args...]" >&2
  exit 2
fi
name=${1#fuzz_}
secs=$2
shift 2
all=$(targets)
grep -qx "$name" <<<"$all" || { echo "fuzz.sh: no target '$name' (scripts/fuzz.sh --list)" >&2; exit 2; }

bash scripts/setup.sh
build=${FUZZ_BUILD_DIR:-build-fuzz}
if [ ! -f "$build/CMakeCache.txt" ]; then
  CC=clang cmake -S . -B "$build" -DEMBER_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF >/dev/null
fi
cmake --build "$build" --target "fuzz_$name" -j"${FUZZ_JOBS:-2}" >/dev/null
exe=$build/fuzz/fuzz_$name

# Seeds once per build folder (remove build-fuzz/seeds to write them again); the model
# seeds need an ember program ($EMBER_BIN, else build/ember from the normal build).
if [ ! -d "$build/seeds/$name" ]; then
  scripts/fuzz-seeds.sh "$build/seeds" >/dev/null
fi
corpus=$build/corpus/$name
findings=$build/findings/$name
mkdir -p "$corpus" "$findings" "fuzz/regressions/$name"
# A finding from an earlier run stays where it is; only this run's are reported.
before=$(ls "$findings" | wc -l)

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
set +e
"$exe" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$findings/" "$@" "$corpus" "$build/seeds/$name" "fuzz/regressions/$name"
rc=$?
set -e
after=$(ls "$findings" | wc -l)
if [ "$rc" -ne 0 ] || [ "$after" -gt "$before" ]; then
  echo "fuzz.sh: fuzz_$name found a problem (exit $rc). The input:" >&2
  ls -t "$findings"/* 2>/dev/null | head -n $((after - before > 0 ? after - before : 1)) | sed 's/^/  /' >&2
  echo "reproduce: $exe FILE; once fixed, keep FILE in fuzz/regressions/$name/" >&2
  exit 1
fi
echo "fuzz.sh: fuzz_$name ran ${secs} s with no finding; corpus $(ls "$corpus" | wc -l) files in $corpus"
