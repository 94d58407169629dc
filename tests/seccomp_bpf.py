"""A classic BPF interpreter for seccomp programs, for the tests of the filter (``sandbox.seccomp``):
what a program returns for one system call, read from ``struct seccomp_data`` as the kernel lays
it out. It knows every instruction class a seccomp program may use (loads of the data, of the
scratch memory and of constants, stores, arithmetic, jumps, returns); anything else fails loudly,
so a program that relies on something the interpreter does not model cannot pass unnoticed."""
import struct

# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6];
SECCOMP_DATA = struct.Struct("<iIQ6Q")
SOCK_FILTER = struct.Struct("=HBBI")      # code, jt, jf, k (the machine's order: how it is exported)

LD, LDX, ST, STX, ALU, JMP, RET, MISC = range(8)
W, ABS, IMM, MEM, LEN = 0x00, 0x20, 0x00, 0x60, 0x80
K, X, A = 0x00, 0x08, 0x10
ALU_OPS = {0x00: lambda a, b: a + b, 0x10: lambda a, b: a - b, 0x20: lambda a, b: a * b,
           0x30: lambda a, b: a // b, 0x40: lambda a, b: a | b, 0x50: lambda a, b: a & b,
           0x60: lambda a, b: a << b, 0x70: lambda a, b: a >> b, 0x80: lambda a, b: -a,
           0x90: lambda a, b: a % b, 0xA0: lambda a, b: a ^ b}
JA, JEQ, JGT, JGE, JSET = 0x00, 0x10, 0x20, 0x30, 0x40
MASK = 0xFFFFFFFF


def instructions(program):
    """[(code, jt, jf, k)] of an exported program (bytes)."""
    return [SOCK_FILTER.unpack_from(program, offset) for offset in range(0, len(program), SOCK_FILTER.size)]


def run(program, arch, number, args=(0,) * 6, instruction_pointer=0):
    """The value ``program`` (bytes, as exported) returns for system call ``number`` with ``args``
    (six 64-bit values) made through architecture ``arch`` (an AUDIT_ARCH_* value)."""
    data = SECCOMP_DATA.pack(number, arch, instruction_pointer, *[a & (2 ** 64 - 1) for a in args])
    ops = instructions(program)
    a = x = pc = 0
    memory = [0] * 16
    for _ in range(len(ops) + 1):          # no loops in BPF: every jump goes forward
        code, jt, jf, k = ops[pc]
        kind, mode, source = code & 0x07, code & 0xE0, code & 0x08
        pc += 1
        if kind in (LD, LDX):
            if code & 0x18 != W:
                raise ValueError(f"a load of another size than a word: {code:#x}")
            value = {ABS: lambda: _word(data, k), IMM: lambda: k, MEM: lambda: memory[k],
                     LEN: lambda: SECCOMP_DATA.size}.get(mode, lambda: _unknown(code))()
            if kind == LD:
                a = value
            else:
                x = value
        elif kind == ST:
            memory[k] = a
        elif kind == STX:
            memory[k] = x
        elif kind == ALU:
            operation = ALU_OPS.get(code & 0xF0) or _unknown(code)
            a = operation(a, x if source else k) & MASK
        elif kind == JMP:
            operand = x if source else k
            if code & 0xF0 == JA:
                pc += k
                continue
            taken = {JEQ: a == operand, JGT: a > operand, JGE: a >= operand,
                     JSET: bool(a & operand)}.get(code & 0xF0)
            if taken is None:
                _unknown(code)
            pc += jt if taken else jf
        elif kind == RET:
            if code & 0x18 == K:
                return k
            if code & 0x18 == A:
                return a
            _unknown(code)
        elif kind == MISC:
            if code & 0xF8 == 0x00:        # TAX
                x = a
            elif code & 0xF8 == 0x80:      # TXA
                a = x
            else:
                _unknown(code)
    raise ValueError("the program ran past its end")


def _word(data, offset):
    if offset % 4 or offset + 4 > len(data):
        raise ValueError(f"a load outside struct seccomp_data: offset {offset}")
    return struct.unpack_from("<I", data, offset)[0]


def _unknown(code):
    raise ValueError(f"an instruction this interpreter does not know: {code:#x}")
