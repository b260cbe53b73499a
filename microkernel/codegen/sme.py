"""SME emitter (``sme``, FEAT_SME only, never SME2): outer products into the ZA tiles.

Tile ``sme_<MR>x<NR>v``: MR and NR count vectors of the *streaming* vector length SVL
(SVL/32 rows or columns each, read at run time with RDSVL), MR x NR <= 4 (ZA holds
four 32-bit tiles ZA0.S-ZA3.S; Arm ARM, DDI 0487, "The ZA array"). ``sme_2x2v`` is
2 SVL/32 x 2 SVL/32: at SVL = 512 bits a 32 x 32 tile of C.

Per K group the kernel loads MR vectors of the A micro-panel and NR of the B
micro-panel and issues MR x NR outer products (Arm ARM, SME instructions "FMOPA
(non-widening)" fp32; "BFMOPA (widening)" and "FMOPA (widening)" bf16 / fp16 pairs
into fp32; "SMOPA", "UMOPA", "USMOPA" int8 quads into int32). A vector of a widening
form holds SVL/32 rows x g K elements, g = 32 bits / element size, consecutive per row:
the driver's K-group layout ``[(k/g)*w*g + l*g + k%g]`` with MK_GA = MK_GB = g (1 for
fp32, 2 for bf16/fp16, 4 for int8), so one contiguous load per vector. Tile (r, c) of
the product uses ZA tile r * NR + c.

Streaming mode. GCC 12 has no SME option and no ACLE SME attributes
(``__arm_streaming``, ``__arm_new("za")`` are GCC 14; checked: GCC 12.2 rejects both
``-march=...+sme`` and the attributes), so the streaming part of each entry point is
one inline-assembly statement assembled with ``.arch_extension sme`` (binutils 2.40):
``smstart`` (PSTATE.SM and PSTATE.ZA on), ``zero {za}``, the K loop, the epilogue,
``smstop``. Nothing the compiler generates runs in streaming mode: no Advanced SIMD
instruction is executed there (illegal without FEAT_SME_FA64; Apple's M4 has no FA64;
``microkernel cross`` runs qemu with ``sme_fa64=off``), only SVE instructions legal in
streaming mode and general-purpose ones. SMSTART and SMSTOP set the Z, P and FFR
registers to zero, so the statement clobbers all of them (the compiler saves the
callee-saved d8-d15). The functions are *private-ZA* in the AAPCS64 SME sense; a
caller's dormant ZA state (TPIDR2_EL0 != 0: a pending lazy save) cannot be committed
without the SME runtime GCC 12 lacks, so the kernel traps (``brk``) rather than
destroy it; nothing in this library leaves ZA dormant. The C parts are baseline
(-march=armv8-a): SME does not imply SVE outside streaming mode.

Epilogue per row i < m of the tile (ZA horizontal slice, W12 the slice index, MOVA
into a Z register): t = alpha * acc (FMUL / MUL, always: x * 1 is exact), then with
beta != 0 t += C * beta (FMLA / MLA, fused for fp32), stored under the column
predicate (WHILELT: nothing at or past n is read or written; beta == 0 never reads
C). A general-stride C (cs_c != 1) goes through a row buffer on the stack with
general-purpose loads and stores (scatter and gather are illegal in streaming mode),
the same vector arithmetic. Every element of C thus sees the same operations in the
same order whatever the SVL and wherever the tile edge falls: with the driver's KC
blocking (independent of MR and NR) results are identical at every streaming vector
length, which ``microkernel cross`` checks.

Numerics: FMOPA fp32 is a fused multiply-add per element and k; BFMOPA and FMOPA
(widening) sum a product pair before accumulating (BFMOPA with the BFloat16 rules of
BFDOT when FPCR.EBF = 0: round-to-odd, denormals flushed; the catalogue's operands make
none), within c (K+2) u with c = 2 as in :mod:`.arm_mmla`; integer outer products are
exact, wrapping modulo 2^32.
"""
from __future__ import annotations

from . import PanelLayout, common
from .arm_common import signature
from .common import header, symbol

__all__ = ["ukernel", "peak", "layout", "edge_symbol", "nr_expr", "mr_expr", "SVL_WORDS",
           "MAX_SVL_WORDS"]

#: the streaming vector length in 32-bit words, at run time (RDSVL is legal outside
#: streaming mode, Arm ARM "RDSVL")
SVL_WORDS = "mk_sme_svl_words()"
#: 32-bit words of the longest streaming vector (2048 bits)
MAX_SVL_WORDS = 64

#: per types: (load mnemonic and element suffix, outer product mnemonic, source suffix,
#: K group, C type, alpha/beta multiply and multiply-add)
_T = {
    "f32": ("ld1w", "s", "fmopa", "s", 1, "float"),
    "bf16": ("ld1h", "h", "bfmopa", "h", 2, "float"),
    "f16": ("ld1h", "h", "fmopa", "h", 2, "float"),
    "s8s8": ("ld1b", "b", "smopa", "b", 4, "int32_t"),
    "u8u8": ("ld1b", "b", "umopa", "b", 4, "int32_t"),
    "u8s8": ("ld1b", "b", "usmopa", "b", 4, "int32_t"),     # unsigned A (Zn) x signed B (Zm)
}

SVL_HELPER = """\
#ifndef MK_SME_SVL_WORDS_DEFINED
#define MK_SME_SVL_WORDS_DEFINED
/* The streaming vector length in 32-bit words (RDSVL, legal outside streaming mode). */
static inline int64_t mk_sme_svl_words(void)
{
    int64_t bytes;
    __asm__(".arch_extension sme\\n\\trdsvl %0, #1" : "=r"(bytes));
    return bytes / 4;
}
#endif
"""

#: every Z (their low 128 bits are the V registers) and P register and FFR: SMSTART and
#: SMSTOP zero them
_CLOBBERS = ", ".join([f'"v{i}"' for i in range(32)] + [f'"p{i}"' for i in range(16)]
                      + ['"ffr"', '"x11"', '"x12"', '"x13"', '"x14"', '"x15"', '"x16"', '"x17"',
                         '"cc"', '"memory"'])


def _types(spec):
    return _T[spec.types]


def layout(spec):
    """fp32 tiles keep the portable default layout (None); typed ones pack K in groups
    of 32 bits (g = 2 for bf16/fp16, 4 for int8), elements as they come."""
    if spec.types == "f32":
        return None
    t = spec.gemm_types
    g = _types(spec)[4]
    integer = t.integer
    return PanelLayout(sa=t.c_a, sb=t.c_b, ta=t.c_a, tb=t.c_b, ga=g, gb=g,
                       tc="int32_t" if integer else "float", cvt_a="(x)", cvt_b="(x)",
                       fill_a=f"(({t.c_a})((i) % 7))" if integer else "((uint16_t)(0x3c00 + (i) % 7))",
                       fill_b=f"(({t.c_b})((i) % 5))" if integer else "((uint16_t)(0x3c00 + (i) % 5))")


def mr_expr(spec) -> str:
    return f"(int64_t)({spec.mr} * {SVL_WORDS})"


def nr_expr(spec) -> str:
    return f"(int64_t)({spec.nr} * {SVL_WORDS})"


def edge_symbol(spec) -> str:
    return common.edge_symbol(spec)


def _asm(spec) -> list[str]:
    """The lines of the streaming-mode assembly (one string per instruction)."""
    mrv, nrv, ku = spec.mr, spec.nr, spec.k_unroll
    ld, esz, mopa, ssz, g, ct = _types(spec)
    integer = ct == "int32_t"
    mul = "mul" if integer else "fmul"
    mla = "mla" if integer else "fmla"
    A = [f"z{i}" for i in range(mrv)]
    B = [f"z{4 + j}" for j in range(nrv)]
    s = [".arch_extension sme",
         "mrs x13, TPIDR2_EL0",            # a caller's dormant ZA: never overwrite it
         "cbz x13, 5f", "brk #0x5a", "5:",
         "smstart",
         "zero {za}",
         "ptrue p0.b",
         "cntw x16"]                        # SVL/32

    def group():
        out = [f"{ld} {{{A[i]}.{esz}}}, p0/z, [%[a], #{i}, mul vl]" for i in range(mrv)]
        out += [f"{ld} {{{B[j]}.{esz}}}, p0/z, [%[b], #{j}, mul vl]" for j in range(nrv)]
        for i in range(mrv):
            for j in range(nrv):
                out.append(f"{mopa} za{i * nrv + j}.s, p0/m, p0/m, {A[i]}.{ssz}, {B[j]}.{ssz}")
        out += [f"addvl %[a], %[a], #{mrv}", f"addvl %[b], %[b], #{nrv}"]
        return out
    if ku > 1:
        s += ["cbz %[kmain], 11f", "10:"]
        for _ in range(ku):
            s += group()
        s += ["subs %[kmain], %[kmain], #1", "b.ne 10b", "11:"]
    s += ["cbz %[krem], 13f", "12:"] + group() + ["subs %[krem], %[krem], #1", "b.ne 12b", "13:"]
    # column predicates, alpha and beta
    s += ["mov x13, #0"]
    for j in range(nrv):
        s.append(f"whilelt p{1 + j}.s, x13, %[n]")
        if j + 1 < nrv:
            s.append("add x13, x13, x16")
    s += ["ld1rw {z30.s}, p0/z, [%[alpha]]", "ld1rw {z31.s}, p0/z, [%[beta]]"]
    # four epilogue variants: mode = 2 * strided + (beta != 0)
    for mode in range(4):
        strided, use_beta = mode >= 2, mode % 2 == 1
        s.append(f"{30 + mode}:")
        s.append("mov x14, %[m]")           # rows still to store
        for r in range(mrv):
            s += ["cmp x14, #0", "b.le 39f",
                  "cmp x14, x16", "csel x15, x14, x16, lt",     # rows of this block
                  "mov w12, #0", f"{40 + r}:"]
            if strided and use_beta:        # gather the C row into the buffer
                s += ["mov x13, #0", "mov x17, %[c]", "60:",
                      "cmp x13, %[n]", "b.ge 61f",
                      "ldr w11, [x17]", "str w11, [%[buf], x13, lsl #2]",
                      "add x17, x17, %[cs]", "add x13, x13, #1", "b 60b", "61:"]
            for j in range(nrv):
                tile = r * nrv + j
                dst = "%[buf]" if strided else "%[c]"
                pj = f"p{1 + j}"
                s += [f"mova z8.s, p0/m, za{tile}h.s[w12, 0]",
                      f"{mul} z8.s, p0/m, z8.s, z30.s"]
                if use_beta:
                    s += [f"ld1w {{z9.s}}, {pj}/z, [{dst}, #{j}, mul vl]",
                          f"{mla} z8.s, p0/m, z9.s, z31.s"]
                s.append(f"st1w {{z8.s}}, {pj if not strided else 'p0'}, [{dst}, #{j}, mul vl]")
            if strided:                     # scatter the row buffer into C
                s += ["mov x13, #0", "mov x17, %[c]", "62:",
                      "cmp x13, %[n]", "b.ge 63f",
                      "ldr w11, [%[buf], x13, lsl #2]", "str w11, [x17]",
                      "add x17, x17, %[cs]", "add x13, x13, #1", "b 62b", "63:"]
            s += ["add %[c], %[c], %[rs]", "add w12, w12, #1", "cmp x12, x15",
                  f"b.lt {40 + r}b", "sub x14, x14, x16"]
        s.append("b 39f")
    s += ["39:", "smstop"]
    return s


def _body(spec) -> list[str]:
    """The static inline function both entry points call (inlined: the K loop is part of
    mk_ukernel_<name>, where `microkernel asm` reads it)."""
    ld, esz, mopa, ssz, g, ct = _types(spec)
    t = spec.gemm_types
    ea, eb = ("float", "float") if spec.types == "f32" else (t.c_a, t.c_b)
    ku, nrv = spec.k_unroll, spec.nr
    lines = _asm(spec)
    # the dispatch to the epilogue variant goes before the K loop's end label: emit it
    # right after the predicates (a computed branch on mode)
    idx = lines.index("ld1rw {z31.s}, p0/z, [%[beta]]") + 1
    lines[idx:idx] = ["cmp %[mode], #1", "b.eq 31f", "cmp %[mode], #2", "b.eq 32f",
                      "cmp %[mode], #3", "b.eq 33f"]
    body = "\n".join(f'        "{x}\\n\\t"' for x in lines)
    return [
        f"static inline __attribute__((always_inline)) void {symbol(spec)}_za(",
        f"        int64_t m, int64_t n, int64_t kc, const {ct} *restrict alpha,",
        f"        const {ea} *restrict a, const {eb} *restrict b,",
        f"        const {ct} *restrict beta, {ct} *restrict c, int64_t rs_c, int64_t cs_c)",
        "{",
        f"    {ct} buf[{nrv * MAX_SVL_WORDS}] __attribute__((aligned(64)));   /* a row of C, strided C */",
        f"    int64_t kg = kc / {g};                 /* K groups: kc is a multiple of {g} */",
        f"    int64_t kmain = kg / {ku}, krem = kg % {ku};" if ku > 1 else
        "    int64_t kmain = 0, krem = kg;",
        "    const int64_t mode = 2 * (cs_c != 1) + (*beta != 0);",
        "    const int64_t rs = rs_c * 4, cs = cs_c * 4;   /* bytes */",
        "    __asm__ volatile(",
        body,
        "        : [a] \"+r\"(a), [b] \"+r\"(b), [c] \"+r\"(c), [kmain] \"+r\"(kmain), [krem] \"+r\"(krem)",
        "        : [m] \"r\"(m), [n] \"r\"(n), [alpha] \"r\"(alpha), [beta] \"r\"(beta),",
        "          [rs] \"r\"(rs), [cs] \"r\"(cs), [buf] \"r\"(buf), [mode] \"r\"(mode)",
        f"        : {_CLOBBERS});",
        "}",
    ]


def ukernel(spec) -> str:
    """C source of ``mk_ukernel_<name>`` (the full SVL-sized tile) and its edge entry point."""
    if spec.isa != "sme":
        raise ValueError(f"sme emitter: ISA {spec.isa!r} is not sme")
    ld, esz, mopa, ssz, g, ct = _types(spec)
    t = spec.gemm_types
    ea, eb = ("float", "float") if spec.types == "f32" else (t.c_a, t.c_b)
    mrv, nrv = spec.mr, spec.nr
    out = [header(spec, nr_desc=f"{nrv} streaming vectors (MR = {mrv} * SVL/32, NR = {nrv} * SVL/32)"),
           "#include <stdint.h>", "",
           f"/* {mopa.upper()} into {mrv * nrv} ZA tile(s), K groups of {g}; streaming mode only inside",
           " * the asm statement (smstart ... smstop). Contract: c_src/mk_ukernel.h. */", ""]
    out += SVL_HELPER.splitlines() + [""]
    out += _body(spec) + [""]
    out += signature(symbol(spec), ct, ea, eb)
    out += ["{", f"    const int64_t vl = {SVL_WORDS};",
            f"    {symbol(spec)}_za({mrv} * vl, {nrv} * vl, kc, alpha, a, b, beta, c, rs_c, cs_c);",
            "}", "",
            "/* Edge tile: the top-left m x n corner only (1 <= m <= MR, 1 <= n <= NR). */"]
    out += signature(common.edge_symbol(spec), ct, ea, eb, edge=True)
    out += ["{", f"    {symbol(spec)}_za(m, n, kc, alpha, a, b, beta, c, rs_c, cs_c);", "}"]
    return "\n".join(out) + "\n"


def peak(isa: str = "sme", types: str = "f32") -> str:
    """Peak loop: 4 independent outer-product chains (one per ZA tile), unrolled 4
    times, in streaming mode; ``*flops`` = 2 x (SVL/32)^2 x K group x 16 per iteration."""
    ld, esz, mopa, ssz, g, ct = _T[types]
    body = []
    for _ in range(4):
        body += [f"{mopa} za{t}.s, p0/m, p0/m, z0.{ssz}, z1.{ssz}" for t in range(4)]
    one = {"s": ["fmov z0.s, #1.0", "fmov z1.s, #1.0"], "h": ["fmov z0.h, #1.0", "fmov z1.h, #1.0"],
           "b": ["dup z0.b, #1", "dup z1.b, #1"]}[ssz]
    lines = ([".arch_extension sme", "smstart", "zero {za}", "ptrue p0.b"] + one
             + ["cbz %[it], 2f", "1:"] + body
             + ["subs %[it], %[it], #1", "b.ne 1b", "2:", "smstop"])
    asm = "\n".join(f'        "{x}\\n\\t"' for x in lines)
    return "\n".join([
        f"/* peak loop for sme {types}: {mopa} into the four ZA tiles, in streaming mode. */",
        "#include <stdint.h>", "#include <time.h>", *SVL_HELPER.splitlines(),
        "double mk_fma_peak(int64_t iters, double *flops)", "{",
        "    const double vl = (double)mk_sme_svl_words();",
        "    int64_t it = iters;",
        "    struct timespec t0, t1;", "    clock_gettime(CLOCK_MONOTONIC, &t0);",
        "    __asm__ volatile(", asm,
        "        : [it] \"+r\"(it) :", f"        : {_CLOBBERS});",
        "    clock_gettime(CLOCK_MONOTONIC, &t1);",
        f"    *flops = 2.0 * vl * vl * {g} * 16 * (double)iters;",
        "    return (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);",
        "}"]) + "\n"
