#!/usr/bin/env python3
"""arch_vs_llama.py — the helpers of bench/arch-vs-llama.sh.

  arch_vs_llama.py tokens MODEL.gguf N SEED
prints N token ids: the model's BOS, then ids drawn from 3..vocab-1 by Python's
random.Random(SEED) (as bench/logprobs-vs-llama.sh draws them).

  arch_vs_llama.py table DIR TOL ROW...
ROW is NAME:SEED; DIR holds, for each, NAME-SEED.lc (llama.cpp, CPU backend), NAME-SEED.ev
(Ember, Vulkan) and NAME-SEED.ec (Ember, CPU backend): one -log p per predicted token
(bench/logprobs_vs_llama's programs). Prints a Markdown table of the perplexities (exp of
the mean -log p, in double) and Ember's relative differences from llama.cpp CPU, and the
largest |delta log p| over the tokens (for information). Exit 1 when a |relative
difference| is over TOL, or a run is missing.

  arch_vs_llama.py ablations DIR TOL ROW...
ROW is NAME:FEATURE; DIR holds NAME-1.lc (llama.cpp) and NAME-1.ab-FEATURE (Ember's CPU
reference with FEATURE switched off, ember_ablate.c). Prints each one's relative
difference from llama.cpp; exit 1 when one is within TOL (the comparison would not have
caught the feature missing)."""
import math
import os
import sys

sys.dont_write_bytecode = True
here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(here, ".."), os.path.join(here, "..", "logprobs_vs_llama")]
from gguf import header  # noqa: E402
from table import load, maxdiff, ppl  # noqa: E402


def tokens(path, n, seed):
    import random
    with open(path, "rb") as f:
        kv = header(f)[0]
    vocab = len(kv["tokenizer.ggml.tokens"][1])
    draw = random.Random(seed)
    ids = [kv["tokenizer.ggml.bos_token_id"][1]] + [draw.randint(3, vocab - 1) for _ in range(n - 1)]
    print(" ".join(map(str, ids)))
    return 0


def table(d, tol, rows):
    print("| family | seed | llama.cpp CPU ppl | Ember Vulkan ppl | rel diff | Ember CPU ppl | rel diff "
          "| max abs d log p (Vulkan, CPU) |")
    print("|---|---|---|---|---|---|---|---|")
    bad, count = [], 0
    for row in rows:
        name, seed = row.rsplit(":", 1)
        base = os.path.join(d, f"{name}-{seed}")
        try:
            r = {k: load(f"{base}.{k}") for k in ("lc", "ev", "ec")}
        except OSError as e:
            print(f"| {name} | {seed} | missing run: {e.filename} | | | | | |")
            bad.append(row)
            continue
        count = len(r["lc"])
        p = {k: ppl(v) for k, v in r.items()}
        rel = {k: p[k] / p["lc"] - 1 for k in ("ev", "ec")}
        print(f"| {name} | {seed} | {p['lc']:.6f} | {p['ev']:.6f} | {rel['ev']:+.1e} | {p['ec']:.6f} "
              f"| {rel['ec']:+.1e} | {maxdiff(r['ev'], r['lc']):.1e}, {maxdiff(r['ec'], r['lc']):.1e} |")
        if not all(abs(x) <= tol for x in rel.values()):
            bad.append(row)
    print(f"\n{count} predicted tokens per row. Ember's perplexity within {tol:g} (relative) of llama.cpp "
          "CPU's on both backends: " + ("every row" if not bad else "NOT " + ", ".join(bad)))
    return 1 if bad else 0


def ablations(d, tol, rows):
    print("| family | switched off | llama.cpp CPU ppl | Ember without it | rel diff | caught |")
    print("|---|---|---|---|---|---|")
    missed = []
    for row in rows:
        name, feature = row.split(":", 1)
        lc, ab = load(os.path.join(d, f"{name}-1.lc")), load(os.path.join(d, f"{name}-1.ab-{feature}"))
        rel = ppl(ab) / ppl(lc) - 1
        caught = abs(rel) > tol
        missed += [] if caught else [row]
        print(f"| {name} | {feature} | {ppl(lc):.6f} | {ppl(ab):.6f} | {rel:+.1e} | {'yes' if caught else 'NO'} |")
    print(f"\nEach feature switched off is off llama.cpp by more than {tol:g}: "
          + ("every one" if not missed else "NOT " + ", ".join(missed)))
    return 1 if missed else 0


def main(argv):
    if len(argv) == 5 and argv[1] == "tokens":
        return tokens(argv[2], int(argv[3]), int(argv[4]))
    if len(argv) >= 4 and argv[1] == "table":
        return table(argv[2], float(argv[3]), argv[4:])
    if len(argv) >= 4 and argv[1] == "ablations":
        return ablations(argv[2], float(argv[3]), argv[4:])
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
