#!/usr/bin/env python3
"""table.py RUNS.tsv DIR NAME... — the tables of bench/speed-vs-llama.sh.
RUNS.tsv: one line per run: round, name, configuration (ember, cpu1, cpu2, vulkan), ok or
failed, prefill tok/s, decode tok/s. DIR holds NAME.gguf (f32: f32.gguf), read for the
matrices' types and sizes (the header only) and its size. Prints, in Markdown:
  1. per file: its matrices, size, and each configuration's prefill and decode, median
     (min-max) over the rounds; llama.cpp's CPU as the better median of 1 and 2 threads
     per metric, marked 1t or 2t;
  2. llama.cpp's CPU at 1 and at 2 threads;
  3. what a decoded token reads (every matrix but the embedding, whose one row is
     negligible: the file's bytes of them) and that times the median decode rate;
  4. Ember's Q4_K_M decode against Q8_0's (issue 22: not slower), when both were run.
Exit 1 when a run failed."""
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gguf import TYPES, header, nbytes  # noqa: E402


def tensors(path):
    """[(name, dims, ggml type)] from a GGUF file's header, without reading the data."""
    with open(path, "rb") as f:
        return [(name, dims, t) for name, dims, t, _ in header(f)[1]]


def fmt(x):
    return f"{x:.0f}" if x >= 100 else f"{x:.1f}" if x >= 10 else f"{x:.2f}"


def cell(v):
    if isinstance(v, str):
        return v
    if v is None:
        return "failed"
    return f"{fmt(statistics.median(v))} ({fmt(min(v))}-{fmt(max(v))})"


def main():
    runs_path, d, names = sys.argv[1], sys.argv[2], sys.argv[3:]
    runs, failed = {}, False
    for line in open(runs_path):
        r, name, c, status, p, dec = line.rstrip("\n").split("\t")
        key = (name, c)
        if status != "ok":
            runs[key] = None
            failed = True
        elif key not in runs or runs[key] is not None:
            runs.setdefault(key, ([], []))
            runs[key][0].append(float(p))
            runs[key][1].append(float(dec))

    def vals(name, c, k):  # k 0: prefill, 1: decode; None when a run failed, "not run"
        if (name, c) not in runs:
            return "not run"
        v = runs.get((name, c))
        return None if v is None else v[k]

    def best_cpu(name, k):
        a, b = vals(name, "cpu1", k), vals(name, "cpu2", k)
        if a is None or b is None:
            return "failed", None
        if statistics.median(b) >= statistics.median(a):
            return cell(b) + " 2t", b
        return cell(a) + " 1t", a

    info = {}
    for name in names:
        ts = tensors(f"{d}/{name}.gguf")
        counts = {}
        for tname, dims, t in ts:
            if len(dims) > 1:
                k = TYPES[t][0] if t in TYPES else str(t)
                counts[k] = counts.get(k, 0) + 1
        mix = " + ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))
        size = os.path.getsize(f"{d}/{name}.gguf")
        read = sum(nbytes(dims, t) for tname, dims, t in ts if len(dims) > 1 and tname != "token_embd.weight")
        info[name] = (mix, size, read)

    print("| file | matrices | file MB | Ember prefill | Ember decode | llama.cpp CPU prefill | llama.cpp CPU decode "
          "| llama.cpp Vulkan prefill | llama.cpp Vulkan decode |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in names:
        mix, size, _ = info[name]
        print(f"| {name.upper()} | {mix} | {size / 1e6:.0f} | {cell(vals(name, 'ember', 0))} "
              f"| {cell(vals(name, 'ember', 1))} | {best_cpu(name, 0)[0]} | {best_cpu(name, 1)[0]} "
              f"| {cell(vals(name, 'vulkan', 0))} | {cell(vals(name, 'vulkan', 1))} |")
    print()
    print("| file | CPU 1 thread prefill | CPU 1 thread decode | CPU 2 threads prefill | CPU 2 threads decode |")
    print("|---|---|---|---|---|")
    for name in names:
        print(f"| {name.upper()} | {cell(vals(name, 'cpu1', 0))} | {cell(vals(name, 'cpu1', 1))} "
              f"| {cell(vals(name, 'cpu2', 0))} | {cell(vals(name, 'cpu2', 1))} |")
    print()
    print("| file | MB read per decoded token | Ember GB/s | llama.cpp CPU GB/s | llama.cpp Vulkan GB/s |")
    print("|---|---|---|---|---|")
    for name in names:
        read = info[name][2]
        out = []
        for v in (vals(name, "ember", 1), best_cpu(name, 1)[1], vals(name, "vulkan", 1)):
            out.append(v if isinstance(v, str) else "failed" if v is None else
                       f"{statistics.median(v) * read / 1e9:.2f}")
        print(f"| {name.upper()} | {read / 1e6:.0f} | {' | '.join(out)} |")
    q4, q8 = vals("q4_k_m", "ember", 1), vals("q8_0", "ember", 1)
    if "q4_k_m" in names and "q8_0" in names and q4 and q8:
        m4, m8 = statistics.median(q4), statistics.median(q8)
        wins = sum(a >= b for a, b in zip(q4, q8))
        print()
        print(f"Ember decode, Q4_K_M against Q8_0: {fmt(m4)} against {fmt(m8)} tok/s (medians, {m4 / m8:.2f}x); "
              f"Q4_K_M as fast or faster in {wins} of {len(q4)} rounds: "
              f"{'not slower' if m4 >= m8 else 'slower'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
