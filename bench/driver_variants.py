"""Write driver variants for bench/gemm_vs_openblas.sh: copies of c_src/driver.c with one
change each, made by text replacement (an anchor that no longer matches is an error, so
a variant never silently measures the unchanged driver).

  cur    the driver as it is
  prof   rdtsc cycles in packing B, packing A and the micro-kernels (mk_prof[3]); with
         -DMK_C_IN_L1 the micro-kernels write one L1-resident MR x NR buffer instead of
         C, with -DMK_A_FIRST / -DMK_B_FIRST every call reads the block's first A (B)
         micro-panel: wrong results, for timing what C, A and B cost (xeon_prof.txt)
  pfb    prefetch the next B micro-panel a slice per micro-kernel call (-DPFLVL=locality)
  pc     prefetch the C tile PCDIST calls ahead, every line of its rows (-DPCDIST=,
         -DPCLVL=locality)
  ua     row-major A read in place by a strided-A copy of avx2_4x24_u8 (no packing of A)
  wsh    the packing workspace on transparent huge pages (2 MiB aligned, madvise)

Each is built with MK_C_ALIGN as gemm()'s module would have it (64 for AVX-512 tiles, off
for AVX2) unless the configuration forces it (bench/gemm_vs_openblas.sh: al / noal).

Usage: python bench/driver_variants.py OUTDIR   (writes OUTDIR/drv_<name>.c, ua_4x24.c)
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TILE_LOOP = """                for (int64_t jp = 0; jp < npanels; ++jp) {
                    const int64_t j = mk_panel_col(jp, w0, nr);
                    const int64_t ncur = mk_panel_width(jp, w0, nr, nc);
                    for (int64_t ip = 0; ip < mpanels; ++ip) {
                        const int64_t i = ip * mr;"""
TILE_CALL = """                        mk_tile(uk, mk_min(mr, mc - i), ncur, kc, &alpha,
                                a_pack + i * kc, b_pack + jp * nr * kc, beta_p,
                                c + (ic + i) * rs_c + (jc + j) * cs_c, rs_c, cs_c, edge);
                    }
                }
"""
PACK_B = """            if (w0 > 0)
                mk_pack_block(w0, kc, b + pc * rs_b + jc * cs_b, cs_b, rs_b, nr, b_pack);
            mk_pack_block(nc - w0, kc, b + pc * rs_b + (jc + w0) * cs_b, cs_b, rs_b, nr,
                          b_pack + (w0 > 0 ? nr * kc : 0));
"""
PACK_A = "                mk_pack_block(mc, kc, a + ic * rs_a + pc * cs_a, rs_a, cs_a, mr, a_pack);\n"


def _sub(src: str, old: str, new: str) -> str:
    if src.count(old) != 1:
        raise SystemExit(f"driver_variants: anchor not found once in c_src/driver.c:\n{old}")
    return src.replace(old, new)


def prof(d: str) -> str:
    d = _sub(d, '#include "mk_ukernel.h"\n',
             '#include "mk_ukernel.h"\n#include <x86intrin.h>\n#define MK_PROF_SLOTS 3\n'
             'uint64_t mk_prof[MK_PROF_SLOTS];\n'
             '#ifndef MK_A_FIRST\n#define MK_AI(i) (i)\n#else\n#define MK_AI(i) 0\n#endif\n'
             '#ifndef MK_B_FIRST\n#define MK_BJ(j) (j)\n#else\n#define MK_BJ(j) 0\n#endif\n')
    d = _sub(d, PACK_B, "            uint64_t t0 = __rdtsc();\n" + PACK_B
             + "            mk_prof[0] += __rdtsc() - t0;\n")
    d = _sub(d, PACK_A, "                uint64_t t1 = __rdtsc();\n" + PACK_A
             + "                uint64_t t2 = __rdtsc();\n                mk_prof[1] += t2 - t1;\n")
    return _sub(d, TILE_CALL, """#ifdef MK_C_IN_L1
                        mk_tile(uk, mk_min(mr, mc - i), ncur, kc, &alpha,
                                a_pack + MK_AI(i) * kc, b_pack + MK_BJ(jp * nr) * kc, beta_p,
                                edge, nr, 1, edge);
#else
                        mk_tile(uk, mk_min(mr, mc - i), ncur, kc, &alpha,
                                a_pack + MK_AI(i) * kc, b_pack + MK_BJ(jp * nr) * kc, beta_p,
                                c + (ic + i) * rs_c + (jc + j) * cs_c, rs_c, cs_c, edge);
#endif
                    }
                }
                mk_prof[2] += __rdtsc() - t2;
""")


def pfb(d: str) -> str:
    return _sub(d, TILE_LOOP, """                const int64_t plines = (nr * kc * 4 + 63) / 64;
                const int64_t chunk = (plines + mpanels - 1) / mpanels;
""" + TILE_LOOP + """
                        if (jp + 1 < npanels) {
                            const char *nx = (const char *)(b_pack + (jp + 1) * nr * kc);
                            const int64_t l1 = mk_min(plines, (ip + 1) * chunk);
                            for (int64_t l = ip * chunk; l < l1; ++l)
                                __builtin_prefetch(nx + 64 * l, 0, PFLVL);
                        }""")


def pc(d: str) -> str:
    return _sub(d, TILE_LOOP, TILE_LOOP + """
                        if (cs_c == 1) {
                            int64_t ipn = ip + PCDIST, jpn = jp;
                            while (ipn >= mpanels) { ipn -= mpanels; ++jpn; }
                            if (jpn < npanels) {
                                const int64_t jn = mk_panel_col(jpn, w0, nr);
                                const int64_t rows = mk_min(mr, mc - ipn * mr);
                                const int64_t cols = mk_panel_width(jpn, w0, nr, nc);
                                const float *cn = c + (ic + ipn * mr) * rs_c + jc + jn;
                                for (int64_t r = 0; r < rows; ++r) {
                                    for (int64_t q = 0; q < cols; q += 16)
                                        __builtin_prefetch(cn + r * rs_c + q, 1, PCLVL);
                                    __builtin_prefetch(cn + r * rs_c + cols - 1, 1, PCLVL);
                                }
                            }
                        }""")


def ua(d: str) -> str:
    return _sub(d, PACK_A + TILE_LOOP, """                if (cs_a == 1 && mc % mr == 0) {   /* row-major A, read in place */
                    const float zero = 0.0f;
                    for (int64_t jp = 0; jp < npanels; ++jp)
                        for (int64_t ip = 0; ip < mpanels; ++ip) {
                            const int64_t i = ip * mr;
                            const int64_t j = mk_panel_col(jp, w0, nr);
                            const int64_t ncur = mk_panel_width(jp, w0, nr, nc);
                            const float *ar = a + (ic + i) * rs_a + pc;
                            const float *bp = b_pack + jp * nr * kc;
                            float *ct = c + (ic + i) * rs_c + (jc + j) * cs_c;
                            if (ncur == nr) {
                                mk_ukernel_ua(kc, &alpha, ar, rs_a, bp, beta_p, ct, rs_c, cs_c);
                                continue;
                            }
                            mk_ukernel_ua(kc, &alpha, ar, rs_a, bp, &zero, edge, nr, 1);
                            for (int64_t r = 0; r < mr; ++r)
                                for (int64_t q = 0; q < ncur; ++q) {
                                    float *p = ct + r * rs_c + q * cs_c;
                                    *p = *beta_p == 0.0f ? edge[r * nr + q]
                                                         : edge[r * nr + q] + *beta_p * *p;
                                }
                        }
                    continue;
                }
""" + PACK_A + TILE_LOOP)


def ua_kernel() -> str:
    """avx2_4x24_u8 plus a copy of its micro-kernel reading A(r, k) at a[r*rs_a + k]."""
    src = (ROOT / "c_src/ukernels/f32_gemm_4x24_u8_avx2.c").read_text()
    start = src.index("void mk_ukernel_avx2_4x24_u8(int64_t kc")
    fn = src[start:src.index("\n}\n", start) + 3]
    fn = _sub(fn, "void mk_ukernel_avx2_4x24_u8(int64_t kc, const float *restrict alpha,\n"
                  "        const float *restrict a,",
              "static void mk_ukernel_ua(int64_t kc, const float *restrict alpha,\n"
              "        const float *restrict a, int64_t rs_a,")
    fn = _sub(fn, "    int64_t k = 0;\n", "    const float *a0p = a, *a1p = a + rs_a, "
              "*a2p = a + 2 * rs_a, *a3p = a + 3 * rs_a;\n    int64_t k = 0;\n")
    fn = re.sub(r"_mm256_broadcast_ss\(a \+ (\d+)\)",
                lambda m: f"_mm256_broadcast_ss(a{int(m[1]) % 4}p + {int(m[1]) // 4})", fn)
    fn = _sub(fn, "a += 32;", "a0p += 8; a1p += 8; a2p += 8; a3p += 8;")
    fn = _sub(fn, "a += 4;", "a0p += 1; a1p += 1; a2p += 1; a3p += 1;")
    return src + "\n" + fn


def wsh(d: str) -> str:
    d = _sub(d, "#include \"mk_ukernel.h\"\n", "#include \"mk_ukernel.h\"\n#include <sys/mman.h>\n")
    return _sub(d, "        ws->buf = (float *)aligned_alloc(64, bytes);\n",
                "        bytes = (bytes + ((size_t)2 << 20) - 1) & ~(((size_t)2 << 20) - 1);\n"
                "        ws->buf = (float *)aligned_alloc((size_t)2 << 20, bytes);\n"
                "        if (ws->buf) madvise(ws->buf, bytes, MADV_HUGEPAGE);\n")


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    d = (ROOT / "c_src/driver.c").read_text()
    for name, make in (("cur", lambda s: s), ("prof", prof), ("pfb", pfb), ("pc", pc),
                       ("ua", ua), ("wsh", wsh)):
        (out / f"drv_{name}.c").write_text(make(d))
    (out / "ua_4x24.c").write_text(ua_kernel())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
