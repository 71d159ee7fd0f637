"""gguf.py — a GGUF file's header, for the bench scripts' Python (bench/quant_vs_llama/
compare.py, bench/speed_vs_llama/table.py). The format: docs/gguf.md and ggml's gguf.h;
the block sizes are ggml's (Ember's own table: engine/model/dtype.c)."""
import struct

SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
# ggml type id -> (name, block values, block bytes)
TYPES = {0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20), 6: ("Q5_0", 32, 22),
         7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110),
         12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210), 20: ("IQ4_NL", 32, 18),
         23: ("IQ4_XS", 256, 136), 30: ("BF16", 1, 2), 39: ("MXFP4", 32, 17)}


def header(f):
    """From a file opened for binary reading at its start: (metadata {key: (type, value)},
    [(name, dims, ggml type, offset from the data's start)], the data's start in the file)."""

    def take(fmt):
        return struct.unpack("<" + fmt, f.read(struct.calcsize("<" + fmt)))[0]

    def string():
        return f.read(take("Q")).decode()

    def value(t):
        if t == 8:
            return (t, string())
        if t == 9:
            et, n = take("I"), take("Q")
            return (t, [value(et) for _ in range(n)])
        return (t, take(SCALAR[t]))

    assert f.read(4) == b"GGUF", f.name
    take("I")
    n_tensors, n_kv = take("Q"), take("Q")
    kv = {}
    for _ in range(n_kv):
        k = string()
        kv[k] = value(take("I"))
    infos = []
    for _ in range(n_tensors):
        name = string()
        dims = [take("Q") for _ in range(take("I"))]
        infos.append((name, dims, take("I"), take("Q")))
    align = kv.get("general.alignment", (4, 32))[1]
    return kv, infos, (f.tell() + align - 1) // align * align


def nbytes(dims, t):
    """A tensor's bytes: its values over its type's block values, times the block's bytes."""
    n = 1
    for d in dims:
        n *= d
    _, blk, size = TYPES[t]
    return n // blk * size
