#!/usr/bin/env python3
"""test_exports.py — libember.so exports exactly the functions include/ember.h declares.

    test_exports.py include/ember.h libember.so

A function declared but not exported cannot be called by an application; a symbol
exported but not declared is internal code leaking into every process that loads the
library (and a name it may clash with). Both are failures."""
import re
import subprocess
import sys

DECL = re.compile(r"^(?:EMBER_API\s+)?(?!typedef|#|\s)[A-Za-z_][\w\s\*]*?\b(ember_\w+)\s*\(", re.M)


def main(header, library):
    declared = set(DECL.findall(open(header, encoding="utf-8").read()))
    out = subprocess.run(["nm", "-D", "--defined-only", library], capture_output=True, text=True, check=True)
    exported = {parts[2] for parts in (l.split() for l in out.stdout.splitlines())
                if len(parts) == 3 and parts[1] in "TDBRWV"}
    for name in sorted(declared - exported):
        print(f"test_exports: {name} is declared in {header} but not exported")
    for name in sorted(exported - declared):
        print(f"test_exports: {name} is exported but not declared in {header}")
    ok = declared == exported and declared
    print(f"test_exports: {len(declared)} functions declared, {len(exported)} symbols exported: "
          f"{'the same' if ok else 'they differ'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
