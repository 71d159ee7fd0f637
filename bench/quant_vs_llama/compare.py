#!/usr/bin/env python3
"""compare.py A.gguf B.gguf — tensor by tensor: the same names, types, shapes and bytes?
Prints one line per differing tensor and a summary; exit 0 when all are the same.
Also: compare.py --file-type A.gguf prints A's general.file_type."""
import struct
import sys

SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
# ggml type id -> (block values, block bytes)
BLOCKS = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34), 10: (256, 84),
          11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210), 20: (32, 18), 23: (256, 136), 30: (1, 2)}


def read(path):
    data = open(path, "rb").read()
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, data, pos)
        pos += struct.calcsize("<" + fmt)
        return v[0]

    def string():
        nonlocal pos
        n = take("Q")
        s = data[pos:pos + n].decode()
        pos += n
        return s

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            et, n = take("I"), take("Q")
            return [value(et) for _ in range(n)]
        return take(SCALAR[t])

    assert data[:4] == b"GGUF"
    pos = 4
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
    align = kv.get("general.alignment", 32)
    base = (pos + align - 1) // align * align
    tensors = {}
    for name, dims, t, off in infos:
        n = 1
        for d in dims:
            n *= d
        blk, size = BLOCKS[t]
        tensors[name] = (t, dims, data[base + off:base + off + n // blk * size])
    return kv, tensors


def main():
    if sys.argv[1] == "--file-type":
        print(read(sys.argv[2])[0].get("general.file_type", -1))
        return 0
    (_, a), (_, b) = read(sys.argv[1]), read(sys.argv[2])
    bad = 0
    for name in sorted(set(a) | set(b)):
        if name not in a or name not in b:
            print("  %s: only in %s" % (name, "A" if name in a else "B"))
            bad += 1
        elif a[name][:2] != b[name][:2] or a[name][2] != b[name][2]:
            same_bytes = sum(x == y for x, y in zip(a[name][2], b[name][2]))
            print("  %s: types %d / %d, %d of %d bytes equal" % (name, a[name][0], b[name][0], same_bytes,
                                                               max(len(a[name][2]), len(b[name][2]))))
            bad += 1
    print("%d tensors, %d differ" % (len(a), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
