#!/usr/bin/env python3
"""table.py DIR NAME... — the table of bench/logprobs-vs-llama.sh. For each NAME, DIR holds
NAME.gguf and one file per run, one -log p per predicted token: NAME.ev (Ember, Vulkan),
NAME.ec (Ember, CPU backend), NAME.lv (llama.cpp, Vulkan, one token per llama_decode: the
mat-vec kernels, F32 activations), NAME.lc (llama.cpp, CPU backend, one batch) and NAME.lvb
(llama.cpp, Vulkan, one batch: the mat-mat kernels). Prints a Markdown table: max |delta
log p| over the tokens and perplexities (exp of the mean -log p). Exit 1 when Ember (either
backend) is off llama.cpp-Vulkan by more than 1e-3 in some log p, or by 1 % in perplexity."""
import math
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "quant_vs_llama"))
from compare import read  # noqa: E402

TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 10: "Q2_K", 11: "Q3_K",
         12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 20: "IQ4_NL", 23: "IQ4_XS", 30: "BF16"}
TOL_LOGP, TOL_PPL = 1e-3, 0.01


def load(path):
    return [float(x) for x in open(path)]


def maxdiff(a, b):
    assert len(a) == len(b), (len(a), len(b))
    return max(abs(x - y) for x, y in zip(a, b))


def ppl(a):
    return math.exp(sum(a) / len(a))


def mix(path):
    """The matrices' types, most common first (1-D norms, always F32, left out)."""
    counts = {}
    for name, t in read(path)[1].items():
        if len(t[1]) > 1:
            k = TYPES.get(t[0], str(t[0]))
            counts[k] = counts.get(k, 0) + 1
    return " + ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))


def main():
    d, names = sys.argv[1], sys.argv[2:]
    print("| file | matrices | EV-LV | EC-LV | EV-EC | ppl EV | ppl EC | ppl LV | EV/LV-1 | EC/LV-1 "
          "| LC-LV | ppl LC | LVB-LV | ppl LVB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    bad = []
    for n in names:
        r = {k: load(os.path.join(d, f"{n}.{k}")) for k in ("ev", "ec", "lv", "lc", "lvb")}
        p = {k: ppl(v) for k, v in r.items()}
        ev_lv, ec_lv = maxdiff(r["ev"], r["lv"]), maxdiff(r["ec"], r["lv"])
        rel_ev, rel_ec = p["ev"] / p["lv"] - 1, p["ec"] / p["lv"] - 1
        print(f"| {n.upper()} | {mix(os.path.join(d, n + '.gguf'))} | {ev_lv:.1e} | {ec_lv:.1e} "
              f"| {maxdiff(r['ev'], r['ec']):.1e} | {p['ev']:.4f} | {p['ec']:.4f} | {p['lv']:.4f} "
              f"| {rel_ev:+.1e} | {rel_ec:+.1e} | {maxdiff(r['lc'], r['lv']):.1e} | {p['lc']:.4f} "
              f"| {maxdiff(r['lvb'], r['lv']):.1e} | {p['lvb']:.4f} |")
        if max(ev_lv, ec_lv) > TOL_LOGP or max(abs(rel_ev), abs(rel_ec)) > TOL_PPL:
            bad.append(n)
    print(f"\n{len(r['lv'])} predicted tokens per file. Ember within {TOL_LOGP:g} of llama.cpp-Vulkan in every "
          f"log p and within {TOL_PPL:.0%} in perplexity: " + ("all files" if not bad else "NOT " + ", ".join(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
