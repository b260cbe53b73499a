"""C tiles aligned by a narrow first panel (MK_C_ALIGN in c_src/driver.c; kernel.py sets
it for tiles of 64-byte vectors). The path is exercised on any machine through a
micro-kernel source that sets MK_C_ALIGN itself (get_kernel(name, source=)): the
generated scalar_4x4 (16-byte alignment) and, where AVX2 runs, avx2_4x24_u8 (32). The
source wraps the micro-kernel so that a full tile whose C does not start on the boundary,
where the driver should have aligned it, gets a NaN: results are checked against a
float64 reference at every start offset of C within a cache line, with one and two
threads, several NC blocks, beta = 0 (NaN in C) and beta != 0, and N narrower than the
lead, with guard values around C."""
import pathlib

import numpy as np
import pytest

import microkernel as mk
from microkernel import codegen, validate
from microkernel.dispatch import usable_isas
from microkernel.kernel import module_source
from microkernel.tile import TileSpec

ROOT = pathlib.Path(__file__).resolve().parents[1]
#: kernel -> (generated file, MK_C_ALIGN: a power of two dividing NR * 4, as the driver needs)
KERNELS = {"scalar_4x4": ("scalar_4x4.c", 16),
           "avx2_4x24_u8": ("avx2_4x24_u8.c", 32)}

#: the generated micro-kernel renamed, and a wrapper under its name that poisons C[0][0]
#: of a full tile left off the boundary where every row of C starts at the same offset
WRAP = """
#undef {sym}
#include <math.h>
void {sym}(int64_t kc, const float *restrict alpha, const float *restrict a,
           const float *restrict b, const float *restrict beta, float *restrict c,
           int64_t rs_c, int64_t cs_c)
{{
    mk_wrapped(kc, alpha, a, b, beta, c, rs_c, cs_c);
    if (cs_c == 1 && (rs_c * 4) % {align} == 0 && (uintptr_t)c % {align} != 0)
        c[0] = NAN;
}}
"""


@pytest.fixture(scope="module", params=list(KERNELS))
def aligned_kernel(request, tmp_path_factory):
    name = request.param
    spec = TileSpec.from_name(name)
    if spec.isa not in usable_isas():
        pytest.skip(f"{name} does not run here")
    stem, align = KERNELS[name]
    sym = codegen.symbol(spec)
    src = tmp_path_factory.mktemp("align") / f"{name}_align{align}.c"
    src.write_text(f"#define MK_C_ALIGN {align}\n#include <stdint.h>\n#define {sym} mk_wrapped\n"
                   + (ROOT / "c_src" / "ukernels" / stem).read_text()
                   + WRAP.format(sym=sym, align=align))
    return mk.get_kernel(name, source=src)


def _c_at(rows, cols, ldc, float_offset, fill):
    """(raw, C): a (rows, cols) float32 view with row stride ldc floats whose first
    element is float_offset floats past a 64-byte boundary, 16 or more floats into raw;
    every other element of raw holds a guard value."""
    raw = np.full(rows * ldc + 64, 7.25, np.float32)
    skip = (-raw.ctypes.data % 64) // 4 + 16 + float_offset
    C = raw[skip:skip + rows * ldc].reshape(rows, ldc)[:, :cols]
    C[...] = fill
    assert C.ctypes.data % 64 == 4 * float_offset
    return raw, C


#: (m, n, k, ldc, NC): the driver aligns only when every row starts at the same offset
#: (ldc * 4 a multiple of MK_C_ALIGN); 5 and 3 columns are narrower than some leads;
#: ldc = 77 leaves the path off; NC = 48 gives several NC blocks after the lead
SHAPES = [(37, 80, 29, 80, None), (64, 208, 300, 208, None), (9, 5, 3, 16, None),
          (20, 3, 40, 32, None), (33, 77, 50, 77, None), (21, 150, 70, 160, 48)]


@pytest.mark.parametrize("m,n,k,ldc,nc", SHAPES)
@pytest.mark.parametrize("threads", [1, 2])
def test_every_offset_of_c_matches_the_reference(aligned_kernel, m, n, k, ldc, nc, threads):
    rng = np.random.default_rng(m * n + k)
    A = rng.standard_normal((m, k), dtype=np.float32)
    B = rng.standard_normal((k, n), dtype=np.float32)
    blocking = {"nc": nc, "kc": 16} if nc else None
    for off in range(16):
        for alpha, beta in ((1.0, 0.0), (0.5, -1.5)):
            C0 = rng.standard_normal((m, n), dtype=np.float32)
            raw, C = _c_at(m, n, ldc, off, np.nan if beta == 0.0 else C0)
            mk.gemm(A, B, C, alpha=alpha, beta=beta, kernel=aligned_kernel, threads=threads,
                    blocking=blocking)
            ref, bound = validate.reference(A, B, C0, alpha, beta)
            ok, ratio, _, detail = validate.check(C, ref, bound)
            assert ok, (off, alpha, beta, ratio, detail)
            inside = np.zeros(raw.size, bool)
            first = (C.ctypes.data - raw.ctypes.data) // 4
            for i in range(m):
                inside[first + i * ldc:first + i * ldc + n] = True
            assert (raw[~inside] == 7.25).all(), f"gemm wrote outside C (offset {off})"


def test_the_edge_catalogue_passes_with_aligned_tiles(aligned_kernel):
    assert all(r.ok for r in validate.run_catalogue(aligned_kernel, quick=True))


def test_only_64_byte_vector_tiles_align_by_default():
    assert "MK_C_ALIGN 64" in module_source(TileSpec.from_name("avx512_8x32_u4"))
    assert "MK_C_ALIGN 64" in module_source(TileSpec.from_name("avx512_8x16"))
    for name in ("avx2_4x24_u8", "avx2_6x16", "scalar_4x4", "neon_8x12", "sve_8x2v"):
        assert "MK_C_ALIGN" not in module_source(TileSpec.from_name(name)), name
