#!/usr/bin/env python3
"""test_coopmat_khr.py SHADER_DIR — checks the KHR cooperative-matrix SPIR-V that
cmake/spirv_coopmat_khr.py made from each NV variant (linear_mm_*_nv -> linear_mm_*_khr).
No device here has cooperative matrices and Debian 12's spirv-val predates the KHR
extension, so the checks are:
  1. the NV module is valid (spirv-val, Vulkan 1.2 rules);
  2. the KHR module types every multiply-add as KHR requires: A and B fp16 matrices of
     use MatrixA/MatrixB, C and the result fp32 of use MatrixAccumulator, M x K, K x N and
     M x N; every load, store, phi and copy keeps its value's type; no NV opcode is left;
  3. rewritten back to NV (its own inverse, written here), the KHR module is the NV one
     word for word: nothing changed but what KHR requires.
"""
import glob
import os
import subprocess
import sys
import tempfile

failures = 0


def check(ok, what):
    global failures
    if not ok:
        failures += 1
        print('FAIL: ' + what)


def words_of(path):
    text = open(path).read().strip()
    return [int(w, 16) for w in text.strip('{}').replace('\n', '').split(',') if w.strip()]


def parse(words):
    out, i = [], 5
    while i < len(words):
        n = words[i] >> 16
        out.append((words[i] & 0xffff, words[i + 1:i + n]))
        i += n
    return out


def text(ops):
    return b''.join(w.to_bytes(4, 'little') for w in ops).split(b'\0')[0].decode()


OP_NAME = {4456: 'TypeKHR', 4457: 'LoadKHR', 4458: 'StoreKHR', 4459: 'MulAddKHR', 4460: 'LengthKHR'}
NV_OPS = set(range(5358, 5363))


def check_types(name, insts):
    """Check 2: the KHR module's matrix types and the instructions that use them."""
    consts = {ops[1]: ops[2] for op, ops in insts if op == 43 and len(ops) == 3}
    floats = {ops[0]: ops[1] for op, ops in insts if op == 22}
    mat = {ops[0]: (floats.get(ops[1]), consts.get(ops[3]), consts.get(ops[4]), consts.get(ops[5]))
           for op, ops in insts if op == 4456}
    pointee = {ops[0]: ops[2] for op, ops in insts if op == 32}
    typ = {}
    for op, ops in insts:
        if op in (61, 4457, 4459, 245, 83, 65, 59) and len(ops) >= 2:
            typ[ops[1]] = ops[0]
    check(any(op == 17 and ops[0] == 6022 for op, ops in insts), name + ': capability CooperativeMatrixKHR')
    check(not any(op == 17 and ops[0] == 5357 for op, ops in insts), name + ': no CooperativeMatrixNV capability')
    exts = [text(ops) for op, ops in insts if op == 10]
    check('SPV_KHR_cooperative_matrix' in exts and 'SPV_NV_cooperative_matrix' not in exts,
          name + ': extensions %s' % exts)
    check(not any(op in NV_OPS for op, _ in insts), name + ': an NV cooperative-matrix opcode is left')
    n_muladd = 0
    for op, ops in insts:
        if op == 4459:  # MulAdd: result type, result, A, B, C
            n_muladd += 1
            a, b, c, d = (mat.get(typ.get(x)) for x in (ops[2], ops[3], ops[4], ops[1]))
            ok = a and b and c and d and a[0] == 16 and b[0] == 16 and c[0] == 32 and c == d
            ok = ok and (a[3], b[3], c[3]) == (0, 1, 2) and a[2] == b[1] and a[1] == c[1] and b[2] == c[2]
            check(ok, '%s: multiply-add %%%d operand types %s %s %s -> %s' % (name, ops[1], a, b, c, d))
        elif op == 61 and ops[0] in mat:  # OpLoad of a matrix: the variable's pointee
            check(pointee.get(typ.get(ops[2])) == ops[0], '%s: load %%%d' % (name, ops[1]))
        elif op == 62 and typ.get(ops[1]) in mat:  # OpStore of a matrix
            check(pointee.get(typ.get(ops[0])) == typ[ops[1]], '%s: store of %%%d' % (name, ops[1]))
        elif op == 245 and ops[0] in mat:  # OpPhi
            check(all(typ.get(v, ops[0]) == ops[0] for v in ops[2::2]), '%s: phi %%%d' % (name, ops[1]))
        elif op in (4457, 4458):  # layout operands are constants 0 or 1
            lay = ops[3] if op == 4457 else ops[2]
            check(consts.get(lay) in (0, 1), '%s: %s layout %%%d' % (name, OP_NAME[op], lay))
    check(n_muladd > 0, name + ': no multiply-add')


def to_nv(insts, nv_bound):
    """Check 3's inverse: the KHR module back in NV form, the ids it added mapped away."""
    consts = {ops[1]: ops[2] for op, ops in insts if op == 43 and len(ops) == 3}
    bools = {(op == 41): ops[1] for op, ops in insts if op in (41, 42)}
    alias, seen, out = {}, {}, []
    for op, ops in insts:
        ops = list(ops)
        if op == 17 and ops == [6022]:
            out.append((op, [5357]))
        elif op == 10 and text(ops) == 'SPV_KHR_cooperative_matrix':
            nv = b'SPV_NV_cooperative_matrix\0' + b'\0' * 2
            out.append((op, [int.from_bytes(nv[i:i + 4], 'little') for i in range(0, len(nv), 4)]))
        elif op == 43 and ops[1] >= nv_bound:
            continue  # the use and layout constants
        elif op in (4456, 32, 28, 29) and ops[0] >= nv_bound or op == 4456:
            body = (5358 if op == 4456 else op, tuple(alias.get(x, x) for x in (ops[1:-1] if op == 4456 else ops[1:])))
            if ops[0] >= nv_bound:
                alias[ops[0]] = seen[body]
            else:
                seen[body] = ops[0]
                out.append((body[0], [ops[0]] + list(body[1])))
        elif op in (32, 28, 29):
            seen[(op, tuple(ops[1:]))] = ops[0]
            out.append((op, ops))
        elif op == 4457:
            out.append((5359, [alias.get(ops[0], ops[0]), ops[1], ops[2], ops[4], bools[consts[ops[3]] == 1]] + ops[5:]))
        elif op == 4458:
            out.append((5360, [ops[0], ops[1], ops[3], bools[consts[ops[2]] == 1]] + ops[4:]))
        elif op == 4459:
            out.append((5361, [alias.get(ops[0], ops[0])] + ops[1:]))
        else:
            if len(ops) >= 2 and ops[0] in alias and op not in (5, 71, 72):
                ops[0] = alias[ops[0]]
            out.append((op, ops))
    return out


def main():
    shader_dir = sys.argv[1]
    pairs = sorted(glob.glob(os.path.join(shader_dir, 'linear_mm_*_nv.spv.inc')))
    check(len(pairs) >= 15, 'NV variants found: %d' % len(pairs))
    for nv_path in pairs:
        name = os.path.basename(nv_path)[:-len('_nv.spv.inc')]
        nv = words_of(nv_path)
        khr = words_of(nv_path.replace('_nv.spv.inc', '_khr.spv.inc'))
        with tempfile.NamedTemporaryFile(suffix='.spv') as f:
            f.write(b''.join(w.to_bytes(4, 'little') for w in nv))
            f.flush()
            r = subprocess.run(['spirv-val', '--target-env', 'vulkan1.2', f.name], capture_output=True, text=True)
            check(r.returncode == 0, name + ' (NV): spirv-val: ' + r.stdout + r.stderr)
        k_insts = parse(khr)
        check_types(name, k_insts)
        check(khr[:3] == nv[:3] and khr[4] == nv[4] and khr[3] > nv[3], name + ': header')
        back = to_nv(k_insts, nv[3])
        same = back == [(op, list(ops)) for op, ops in parse(nv)]
        if not same:
            orig = parse(nv)
            i = next((i for i, (a, b) in enumerate(zip(back, orig)) if a != (b[0], list(b[1]))), min(len(back), len(orig)))
            print('first difference at instruction %d: %s vs %s' % (i, back[i:i + 1], orig[i:i + 1]))
        check(same, name + ': rewritten back, the NV module word for word')
        print('%s: %d multiply-adds, %d words NV, %d KHR' % (name, sum(op == 4459 for op, _ in k_insts), len(nv),
                                                              len(khr)))
    print('test_coopmat_khr: %s' % ('FAILED (%d)' % failures if failures else 'ok'))
    sys.exit(1 if failures else 0)


if __name__ == '__main__':
    main()
