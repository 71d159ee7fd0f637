#!/usr/bin/env python3
"""compare.py A.gguf B.gguf — tensor by tensor: the same names, types, shapes and bytes?
And the same metadata (keys, types, values, general.file_type among them)? Prints one line
per differing tensor or key and a summary; exit 0 when all are the same.
Also: compare.py --file-type A.gguf prints A's general.file_type;
compare.py --llama-ftype SRC NAME prints the file type llama-quantize takes NAME for,
read from llama.cpp's own source tree SRC (tools/quantize/quantize.cpp, include/llama.h)."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gguf import header, nbytes  # noqa: E402


def read(path):
    """(metadata, {name: (ggml type, dims, bytes)})."""
    with open(path, "rb") as f:
        kv, infos, base = header(f)
        tensors = {}
        for name, dims, t, off in infos:
            f.seek(base + off)
            tensors[name] = (t, dims, f.read(nbytes(dims, t)))
    return kv, tensors


def llama_ftype(src, name):
    """The LLAMA_FTYPE_* value quantize.cpp's QUANT_OPTIONS maps NAME (any case) to."""
    options = open(src + "/tools/quantize/quantize.cpp").read()
    m = re.search(r'\{\s*"%s",\s*(LLAMA_FTYPE_\w+)' % re.escape(name.upper()), options)
    if not m:
        return None
    v = re.search(r"^\s*%s\s*=\s*(\d+)" % m.group(1), open(src + "/include/llama.h").read(), re.M)
    return int(v.group(1))


def value_text(v):
    t, x = v
    return "[%d values]" % len(x) if t == 9 else repr(x)


def main():
    if sys.argv[1] == "--file-type":
        print(read(sys.argv[2])[0].get("general.file_type", (4, -1))[1])
        return 0
    if sys.argv[1] == "--llama-ftype":
        ftype = llama_ftype(sys.argv[2], sys.argv[3])
        print(ftype if ftype is not None else "")
        return 0 if ftype is not None else 1
    (kva, a), (kvb, b) = read(sys.argv[1]), read(sys.argv[2])
    bad = 0
    for key in sorted(set(kva) | set(kvb)):
        if kva.get(key) != kvb.get(key):
            print("  key %s: %s / %s" % (key, value_text(kva[key]) if key in kva else "absent",
                                         value_text(kvb[key]) if key in kvb else "absent"))
            bad += 1
    for name in sorted(set(a) | set(b)):
        if name not in a or name not in b:
            print("  %s: only in %s" % (name, "A" if name in a else "B"))
            bad += 1
        elif a[name][:2] != b[name][:2] or a[name][2] != b[name][2]:
            same_bytes = sum(x == y for x, y in zip(a[name][2], b[name][2]))
            print("  %s: types %d / %d, %d of %d bytes equal" % (name, a[name][0], b[name][0], same_bytes,
                                                               max(len(a[name][2]), len(b[name][2]))))
            bad += 1
    print("%d tensors, %d keys, %d differ" % (len(a), len(kva), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
