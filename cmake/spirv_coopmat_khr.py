#!/usr/bin/env python3
"""spirv_coopmat_khr.py IN.spv.inc OUT.spv.inc — rewrites a compute shader's
SPV_NV_cooperative_matrix SPIR-V into SPV_KHR_cooperative_matrix SPIR-V.

Why: AMD and Intel drivers offer only VK_KHR_cooperative_matrix, and Debian 12's glslang
(12.0) writes only the NV form (GL_NV_cooperative_matrix). The two differ in little:
  - the KHR matrix type names its use (operand A, operand B or accumulator), where NV's
    f16 A and B fragments of one shape are one type: each NV type is split by the use of
    the values that have it, found by following every value, variable and access chain
    of that type to the multiply-adds that consume it (a value used both ways is an error);
  - loads and stores take a layout constant (0 row major, 1 column major) before the
    stride, where NV takes a bool after it;
  - the capability, the extension and the opcodes.
Nothing else changes: ids stay, other instructions keep their words
(tests/test_coopmat_khr.py rewrites the result back and compares word for word).

IN and OUT are what `glslc -mfmt=c` writes: "{0x07230203,...}" (hex words). A construct
this script does not know (a matrix passed to a function, a bool layout that is not a
constant) stops the build with a message rather than writing doubtful SPIR-V.
"""
import sys

# SPIR-V numbers (the SPIR-V registry: spirv.core.grammar.json)
OP_EXTENSION, OP_CAPABILITY, OP_TYPE_INT, OP_TYPE_STRUCT = 10, 17, 21, 30
OP_TYPE_ARRAY, OP_TYPE_RUNTIME_ARRAY, OP_TYPE_POINTER, OP_TYPE_FUNCTION = 28, 29, 32, 33
OP_CONSTANT_TRUE, OP_CONSTANT_FALSE, OP_CONSTANT, OP_STORE = 41, 42, 43, 62
NV = {'cap': 5357, 'type': 5358, 'load': 5359, 'store': 5360, 'muladd': 5361, 'length': 5362}
KHR = {'cap': 6022, 'type': 4456, 'load': 4457, 'store': 4458, 'muladd': 4459, 'length': 4460}
USE = {'A': 0, 'B': 1, 'C': 2}  # CooperativeMatrixUse: MatrixAKHR, MatrixBKHR, MatrixAccumulatorKHR
# Instructions whose first operand is not a result type: debug, annotations, mode
# setting, stores, barriers and control flow (every other one that has a result has a
# result type, except the type declarations, 19-39).
NO_RESULT_TYPE = {3, 4, 5, 6, 7, 8, 10, 11, 14, 15, 16, 17, 56, 62, 63, 71, 72, 73, 74, 224, 225, 246, 247, 248,
                  249, 250, 251, 252, 253, 254, 255, 317, 330, 331, 332, 5632, 5633, NV['store']}


def fail(msg):
    sys.exit('spirv_coopmat_khr: ' + msg)


def read_inc(path):
    text = open(path).read().strip()
    if not (text.startswith('{') and text.endswith('}')):
        fail(path + ': not glslc -mfmt=c output')
    return [int(w, 16) for w in text[1:-1].replace('\n', '').split(',') if w.strip()]


def write_inc(path, words):
    lines = [','.join('0x%08x' % w for w in words[i:i + 4]) for i in range(0, len(words), 4)]
    open(path, 'w').write('{' + ',\n'.join(lines) + '}\n')


def instructions(words):
    """(opcode, operands) of each instruction after the 5-word header."""
    out, i = [], 5
    while i < len(words):
        n, op = words[i] >> 16, words[i] & 0xffff
        if n == 0 or i + n > len(words):
            fail('malformed instruction at word %d' % i)
        out.append((op, list(words[i + 1:i + n])))
        i += n
    return out


def string_words(s):
    b = s.encode() + b'\0'
    b += b'\0' * (-len(b) % 4)
    return [int.from_bytes(b[i:i + 4], 'little') for i in range(0, len(b), 4)]


def is_type(op):
    return 19 <= op <= 39 or op == NV['type']


class Classes:
    """Union-find over ids: the values, variables and access chains that share a use."""

    def __init__(self):
        self.parent = {}

    def find(self, x):
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a, b):
        self.parent[self.find(a)] = self.find(b)


def matrix_types(insts):
    """The NV matrix types (id -> component, scope, rows, columns), the types that hold
    one (id -> the matrix type: arrays and pointers of it, itself), the bool constants
    (id -> 1 true, 0 false) and the 32-bit unsigned integer type."""
    mat, holds, bools, uint_type = {}, {}, {}, None
    for op, ops in insts:
        if op == NV['type']:
            if uint_type is None:
                fail('no 32-bit unsigned integer type before the first matrix type')
            mat[ops[0]] = ops[1:]
            holds[ops[0]] = ops[0]
        elif op in (OP_TYPE_ARRAY, OP_TYPE_RUNTIME_ARRAY) and ops[1] in holds:
            holds[ops[0]] = holds[ops[1]]
        elif op == OP_TYPE_POINTER and ops[2] in holds:
            holds[ops[0]] = holds[ops[2]]
        elif op in (OP_TYPE_FUNCTION, OP_TYPE_STRUCT) and any(t in holds for t in ops[1:]):
            fail('a cooperative matrix in a function signature or a struct')
        elif op == OP_TYPE_INT and ops[1:] == [32, 0] and uint_type is None:
            uint_type = ops[0]
        elif op in (OP_CONSTANT_TRUE, OP_CONSTANT_FALSE):
            bools[ops[1]] = 1 if op == OP_CONSTANT_TRUE else 0
    if not mat:
        fail('no SPV_NV_cooperative_matrix type')
    return mat, holds, bools, uint_type


def value_of(op, ops, holds):
    """Whether the instruction makes a value (or variable) whose type holds a matrix."""
    return op not in NO_RESULT_TYPE and not is_type(op) and len(ops) >= 2 and ops[0] in holds


def roles(insts, mat, holds):
    """The use (A, B, C) of every matrix-holding value: a class of values that flow into
    one another (loads and stores through variables and access chains, phis, copies,
    arithmetic) takes the use of the multiply-add operand it reaches."""
    typed = {ops[1]: ops[0] for op, ops in insts if value_of(op, ops, holds)}
    cls = Classes()
    for op, ops in insts:
        if value_of(op, ops, holds) and op not in (NV['load'], NV['muladd']):
            for a in ops[2:]:
                if a in typed:
                    cls.union(a, ops[1])
        elif op == OP_STORE and ops[0] in typed:
            cls.union(ops[0], ops[1])
    role = {}
    for op, ops in insts:
        if op == NV['muladd']:
            for v, r in ((ops[2], 'A'), (ops[3], 'B'), (ops[4], 'C'), (ops[1], 'C')):
                k = cls.find(v)
                if role.setdefault(k, r) != r:
                    fail('%%%d is used both as matrix %s and as %s' % (v, role[k], r))
    uses = {m: [] for m in mat}  # matrix type -> its uses, in order of first appearance
    for v, t in typed.items():
        r = role.get(cls.find(v))
        if r is not None and r not in uses[holds[t]]:
            uses[holds[t]].append(r)
    for m in mat:
        if not uses[m]:
            uses[m] = ['C']
    value_role = {}
    for v, t in typed.items():
        r = role.get(cls.find(v))
        if r is None:
            if len(uses[holds[t]]) != 1:
                fail('%%%d: a matrix value that reaches no multiply-add' % v)
            r = uses[holds[t]][0]
        value_role[v] = r
    return value_role, uses


def rewrite(words):
    insts = instructions(words)
    bound = words[3]
    mat, holds, bools, uint_type = matrix_types(insts)
    value_role, uses = roles(insts, mat, holds)
    # Each (type holding a matrix, use) gets a type id: a type's first use keeps its id.
    new_id = {}
    for t in holds:
        for i, r in enumerate(uses[holds[t]]):
            new_id[(t, r)] = t if i == 0 else bound
            bound += i != 0
    const = list(range(bound, bound + 3))  # uint constants 0, 1, 2: uses and layouts
    bound += 3
    first_matrix = next(iter(mat))
    out = []
    for op, ops in insts:
        if op == OP_CAPABILITY and ops[0] == NV['cap']:
            out.append((op, [KHR['cap']]))
        elif op == OP_EXTENSION and ops == string_words('SPV_NV_cooperative_matrix'):
            out.append((op, string_words('SPV_KHR_cooperative_matrix')))
        elif op == NV['type']:
            if ops[0] == first_matrix:
                out += [(OP_CONSTANT, [uint_type, const[v], v]) for v in range(3)]
            out += [(KHR['type'], [new_id[(ops[0], r)]] + ops[1:] + [const[USE[r]]]) for r in uses[ops[0]]]
        elif op in (OP_TYPE_POINTER, OP_TYPE_ARRAY, OP_TYPE_RUNTIME_ARRAY) and ops[0] in holds:
            inner = 2 if op == OP_TYPE_POINTER else 1
            for r in uses[holds[ops[0]]]:
                o = list(ops)
                o[0], o[inner] = new_id[(ops[0], r)], new_id[(ops[inner], r)]
                out.append((op, o))
        elif op == NV['load']:
            if ops[4] not in bools:
                fail('%%%d: a load whose column-major operand is not a constant bool' % ops[1])
            rt = new_id[(ops[0], value_role[ops[1]])]
            out.append((KHR['load'], [rt, ops[1], ops[2], const[bools[ops[4]]], ops[3]] + ops[5:]))
        elif op == NV['store']:
            if ops[3] not in bools:
                fail('a store whose column-major operand is not a constant bool')
            out.append((KHR['store'], [ops[0], ops[1], const[bools[ops[3]]], ops[2]] + ops[4:]))
        elif op == NV['length']:
            fail('OpCooperativeMatrixLengthNV is not rewritten')
        elif value_of(op, ops, holds):
            o = list(ops)
            o[0] = new_id[(ops[0], value_role[ops[1]])]
            out.append((KHR['muladd'] if op == NV['muladd'] else op, o))
        else:
            out.append((op, ops))
    words_out = words[:5]
    words_out[3] = bound
    for op, ops in out:
        words_out += [(len(ops) + 1) << 16 | op] + ops
    return words_out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    write_inc(sys.argv[2], rewrite(read_inc(sys.argv[1])))


if __name__ == '__main__':
    main()
