"""The edge catalogue: every case a GEMM kernel is known to get wrong, checked
against a float64 numpy reference with a stated error bound.

Bound (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., sec. 3.5,
inner products), element-wise for a float32 result:

    |C - C_ref| <= c * (K + 2) * u * (|alpha| |A||B| + |beta| |C0|),  u = 2**-24

with c = :data:`C_BOUND`; the "+2" covers the final alpha and beta roundings and
makes K = 0 cases exact-ish (beta*C0 rounds once).

Every output C is a view into a larger buffer filled with a guard value: anything
outside the view that changes is reported as an out-of-bounds write. Cases cover
every M remainder 1..MR-1 and N remainder 1..NR-1, K in {0, 1, unroll-1, unroll+1,
KC-1, KC, KC+1}, M = 0 / N = 0, alpha = 0 with NaN in A and B, beta = 0 with NaN in
C, transposed and strided views, negative strides, unaligned and misaligned buffers,
small blockings that exercise every loop of the driver, two and three threads (the
slices and the team), and the matrix-vector paths (n == 1, m == 1) with short and long
rows, on one and two threads.
"""
from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["Case", "Result", "catalogue", "make_operands", "reference", "check",
           "run_case", "run_catalogue", "C_BOUND", "U", "GUARD"]

U = 2.0 ** -24
C_BOUND = 2.0
GUARD = np.float32(-7.25e30)   # a value no correct GEMM writes here
#: the guard of an integer C (no correct int32 result of the catalogue's operands)
GUARD_INT = np.int32(-1234567891)
PAD = 3                        # guard elements around each view


@dataclasses.dataclass(frozen=True)
class Case:
    """One GEMM problem. Layouts: 'c' (row-major), 'f' (column-major, i.e. a
    transposed view), 's' (strided view, steps 2 and 3), 'n' (negative strides
    on both axes), 'u' (data 4 bytes past a 64-byte boundary: unaligned vectors),
    'm' (data 1 byte off: misaligned elements, gemm copies)."""
    label: str
    m: int
    n: int
    k: int
    alpha: float = 1.0
    beta: float = 0.0
    a_layout: str = "c"
    b_layout: str = "c"
    c_layout: str = "c"
    nan_c: bool = False      # fill C0 with NaN (only with beta == 0)
    nan_ab: bool = False     # fill A and B with NaN (only with alpha == 0)
    threads: int = 1
    blocking: tuple | None = None   # (kc, mc, nc) override

    @property
    def id(self) -> str:
        return self.label


@dataclasses.dataclass
class Result:
    kernel: str
    case: Case
    ok: bool
    err_ratio: float         # max |C - C_ref| / bound (<= 1 passes)
    guard_ok: bool
    detail: str = ""


def catalogue(mr: int, nr: int, k_unroll: int, kc: int, *, quick: bool = False,
              kgroup: int = 1, types: str = "f32", extra_ks=()) -> list[Case]:
    """The edge catalogue for an MR x NR tile with k-unroll and blocking KC (and the
    depths ``extra_ks`` beside the K cases around it).

    ``quick`` keeps one case per remainder (for emulated runs). A tile whose panels
    hold K in groups (``kgroup``: pairs, quads, AMX rows) also gets K = 1, g-1, g, g+1,
    2g+1 (the zero padding of the last group); an integer tile (``types``) gets its
    alpha = 0 case without NaN (integers have none: the operands are extreme values
    instead) and integer alpha and beta."""
    cases: list[Case] = []
    integer = types in ("s8s8", "u8s8", "u8u8")
    _add = cases.append

    def add(case):
        if integer:   # integer alpha and beta: 1.5 -> 2, 0.25 -> 3, -1.5 -> -2, 0.7 -> 2
            ints = {1.5: 2, 0.25: 3, -1.5: -2, 0.7: 2, 0.5: -1, 0.75: 3, 2.0: 2}
            case = dataclasses.replace(case, alpha=ints.get(case.alpha, case.alpha),
                                       beta=ints.get(case.beta, case.beta))
        _add(case)
    K = 19
    for r in range(1, mr):
        add(Case(f"m_rem{r}", r, nr, K))
        if not quick:
            add(Case(f"m_{mr}+{r}", mr + r, 2 * nr + 1, K, beta=0.5))
    for r in range(1, nr):
        add(Case(f"n_rem{r}", mr, r, K))
        if not quick:
            add(Case(f"n_{nr}+{r}", 2 * mr + 1, nr + r, K, beta=0.5))
    ks = {0, 1, max(k_unroll - 1, 1), k_unroll + 1, kc - 1, kc, kc + 1, *extra_ks}
    if kgroup > 1:
        ks |= {kgroup - 1, kgroup, kgroup + 1, 2 * kgroup + 1, kc + kgroup - 1}
    ks = sorted(ks)
    for k in ks:
        add(Case(f"k{k}", mr + 1, nr + 1, k, alpha=1.5, beta=0.25))
    add(Case("k0_beta0_nanC", mr + 2, nr + 3, 0, beta=0.0, nan_c=True))
    add(Case("alpha0_nanAB", mr + 2, nr + 3, 9, alpha=0.0, beta=0.5, nan_ab=True))
    add(Case("alpha0_beta0_nanAB_nanC", mr, nr, 9, alpha=0.0, beta=0.0, nan_ab=True, nan_c=True))
    add(Case("beta0_nanC", 2 * mr + 3, 2 * nr + 5, 33, beta=0.0, nan_c=True))
    add(Case("beta1", 2 * mr + 3, 2 * nr + 5, 33, alpha=-1.0, beta=1.0))
    add(Case("alpha_beta", 2 * mr + 3, 2 * nr + 5, 33, alpha=-1.5, beta=0.7))
    add(Case("m0", 0, nr, 5, beta=0.5))
    add(Case("n0", mr, 0, 5, beta=0.5))
    add(Case("mnk0", 0, 0, 0))
    add(Case("one", 1, 1, 1, alpha=2.0, beta=-1.0))
    # matrix-vector (n == 1, or m == 1 through C^T): 8-row, 4-row and 1-row dot
    # products with a K tail, the column-axpy and strided paths
    add(Case("gemv", 21, 1, 37, alpha=1.5, beta=0.5))
    add(Case("gemv_beta0_nanC", 21, 1, 37, nan_c=True))
    add(Case("gemv_A_f", 21, 1, 37, beta=0.5, a_layout="f"))
    add(Case("gemv_A_s", 21, 1, 37, beta=0.5, a_layout="s"))
    add(Case("gevm", 1, 21, 37, alpha=-1.0, beta=0.5))
    if not quick:
        add(Case("gemv_long_k", 21, 1, 800, beta=0.5))
        # large enough (m*k >= 2^20) for the driver to split the rows between threads,
        # with long rows and short ones (each thread: 8 rows at a time, then 4, then 1)
        add(Case("gemv_threads2", 1029, 1, 1031, beta=0.5, threads=2))
        add(Case("gemv_threads2_short", 2058, 1, 517, beta=0.5, threads=2))
    for lay in "fsnum":
        add(Case(f"A_{lay}", 2 * mr + 1, 2 * nr - 1, 37, beta=0.5, a_layout=lay))
        add(Case(f"B_{lay}", 2 * mr + 1, 2 * nr - 1, 37, beta=0.5, b_layout=lay))
        add(Case(f"C_{lay}", 2 * mr + 1, 2 * nr - 1, 37, beta=0.5, c_layout=lay))
    add(Case("C_f_beta0_nanC", 2 * mr + 1, 2 * nr - 1, 37, c_layout="f", nan_c=True))
    add(Case("all_n", 3 * mr - 1, 3 * nr - 1, 41, alpha=0.5, beta=2.0,
             a_layout="n", b_layout="n", c_layout="n"))
    add(Case("all_f", 3 * mr - 1, 3 * nr - 1, 41, beta=0.5, a_layout="f", b_layout="f",
             c_layout="f"))
    # tiny blocking: every loop of the driver (jc, pc, ic, jr, ir) runs several times
    small = (max(k_unroll + 1, 5), 2 * mr, 2 * nr)
    add(Case("small_blocking", 5 * mr + 3, 5 * nr + 7, 4 * small[0] + 3, beta=0.5, blocking=small))
    add(Case("small_blocking_beta0_nanC", 5 * mr + 3, 5 * nr + 7, 4 * small[0] + 3, nan_c=True,
             blocking=small))
    add(Case("small_blocking_f", 5 * mr + 3, 5 * nr + 7, 4 * small[0] + 3, beta=0.5,
             blocking=small, a_layout="f", b_layout="s", c_layout="n"))
    # C 16 bytes past a 64-byte boundary ('u') with every row at that offset (row stride
    # cols + 2*PAD a multiple of 16 floats): the narrow first panel of the driver's
    # aligned-C path (MK_C_ALIGN, AVX-512 modules), once with several NC blocks and threads
    def rows_aligned(at_least: int) -> int:
        return -(-(at_least + 2 * PAD) // 16) * 16 - 2 * PAD
    add(Case("C_u_rows_aligned", 2 * mr + 1, rows_aligned(2 * nr + 1), 37, beta=0.5,
             c_layout="u"))
    add(Case("C_u_rows_aligned_small_blocking_threads2", 5 * mr + 3,
             rows_aligned(5 * nr + 7), 4 * small[0] + 3, beta=0.5, c_layout="u",
             blocking=small, threads=2))
    add(Case("threads2", 7 * mr + 1, 6 * nr + 3, 70, beta=0.5, threads=2))
    add(Case("threads2_small_blocking", 7 * mr + 1, 6 * nr + 3, 70, beta=0.5, threads=2,
             blocking=small))
    # three threads: the team's flow of dynamic units (c_src/mk_team.h, mk_loops_flow),
    # over several NC and KC blocks, one case with the narrow first panel
    add(Case("threads3_small_blocking", 7 * mr + 1, 6 * nr + 3, 70, beta=0.5, threads=3,
             blocking=small))
    add(Case("C_u_rows_aligned_small_blocking_threads3", 5 * mr + 3,
             rows_aligned(5 * nr + 7), 4 * small[0] + 3, beta=0.5, c_layout="u",
             blocking=small, threads=3))
    if not quick:
        add(Case("medium", 131, 97, 300, alpha=0.75, beta=0.5))
    return cases


# -- operands -------------------------------------------------------------------------

def _aligned_empty(nbytes: int, offset: int) -> np.ndarray:
    """A uint8 buffer whose data starts `offset` bytes past a 64-byte boundary."""
    raw = np.empty(nbytes + 128, dtype=np.uint8)
    start = (-raw.ctypes.data) % 64 + offset
    return raw[start:start + nbytes]


def _guard(dtype: np.dtype):
    """The guard value of an operand buffer of ``dtype`` (a read of it shows)."""
    if dtype.kind in "iu":
        return np.iinfo(dtype).max
    if dtype.itemsize == 2 and dtype.kind == "f":      # float16: GUARD would be -inf
        return -60000.0
    return GUARD


def _view(rows: int, cols: int, layout: str, fill: np.ndarray | None = None,
          dtype=np.float32, guard=None):
    """A (rows, cols) view of ``dtype`` in the given layout inside a guarded buffer.

    Returns (view, base, mask): base is the whole float32 buffer (guard-filled),
    mask marks the elements the view covers."""
    step_r, step_c = (2, 3) if layout == "s" else (1, 1)
    br, bc = rows * step_r + 2 * PAD, cols * step_c + 2 * PAD
    dtype = np.dtype(dtype)
    guard = _guard(dtype) if guard is None else guard
    if layout in "um":
        off = 4 if layout == "u" else 1
        raw = _aligned_empty(br * bc * dtype.itemsize, off)
        base = np.ndarray((br * bc,), dtype, raw).reshape(br, bc)
    elif layout == "f":
        base = np.empty((bc, br), dtype=dtype).T  # column-major storage
    else:
        base = np.empty((br, bc), dtype=dtype)
    base[...] = guard
    v = base[PAD:PAD + rows * step_r:step_r, PAD:PAD + cols * step_c:step_c]
    if layout == "n":
        v = v[::-1, ::-1]
    mask = np.zeros(base.shape, dtype=bool)
    mview = mask[PAD:PAD + rows * step_r:step_r, PAD:PAD + cols * step_c:step_c]
    mview[...] = True
    if fill is not None:
        v[...] = fill
    return v, base, mask


def _values(rng, shape, dtype: np.dtype):
    """Random operands of ``dtype``: uniform in [-1, 1) rounded to a float type; the
    whole range of an integer type (the extremes included, where wrong sign handling
    or a saturating instruction shows)."""
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        v = rng.integers(info.min, int(info.max) + 1, shape)
        return v.astype(dtype)
    return rng.uniform(-1, 1, shape).astype(np.float32).astype(dtype)


def make_operands(case: Case, rng: np.random.Generator, types: str = "f32"):
    """(A, B, C, C0, base_c, mask_c) for ``types`` (microkernel.dtypes): A, B, C are
    views in the case's layouts; C0 is a copy of C's initial values; base_c/mask_c
    locate the guards around C. Integer cases have no NaN: ``nan_ab`` fills A and B
    with their extreme values, ``nan_c`` C with the int32 extremes (a kernel that reads
    C when beta = 0, or A and B when alpha = 0, is then wrong)."""
    from .dtypes import get
    t = get(types)
    m, n, k = case.m, case.n, case.k
    a = _values(rng, (m, k), t.dtype("a"))
    b = _values(rng, (k, n), t.dtype("b"))
    out = t.dtype("out")
    c0 = (_values(rng, (m, n), np.dtype(np.int8)).astype(out) if t.integer else
          rng.uniform(-1, 1, (m, n)).astype(np.float32))
    if case.nan_ab:
        if t.integer:
            a[...] = np.iinfo(a.dtype).min
            b[...] = np.iinfo(b.dtype).max
        else:
            a[...] = np.nan
            b[...] = np.nan
    if case.nan_c:
        c0[...] = np.iinfo(np.int32).min if t.integer else np.nan
    A, _, _ = _view(m, k, case.a_layout, a, a.dtype)
    B, _, _ = _view(k, n, case.b_layout, b, b.dtype)
    C, base_c, mask_c = _view(m, n, case.c_layout, c0, out,
                              GUARD_INT if t.integer else GUARD)
    return A, B, C, c0.copy(), base_c, mask_c


def _int_matmul(A, B) -> np.ndarray:
    """A @ B of 8-bit integers, exact, as int64. Through float64 BLAS when K x 2^16 <
    2^53 (every product of two 8-bit values is below 2^16 in magnitude, so every partial
    sum, in any order, is an integer below 2^53: exactly representable, hence exact);
    numpy's int64 matmul (no BLAS: minutes at n = 4096) otherwise."""
    k = A.shape[1]
    if max(np.iinfo(A.dtype).bits, np.iinfo(B.dtype).bits) <= 8 and k * 2 ** 16 < 2 ** 53:
        return (A.astype(np.float64) @ B.astype(np.float64)).astype(np.int64)
    return A.astype(np.int64) @ B.astype(np.int64)


def reference(A, B, C0, alpha: float, beta: float, types: str | None = None):
    """(C_ref, bound): float64 reference with BLAS semantics and the element-wise
    error bound (see the module docstring), from the inputs as stored (bf16 / fp16
    values already rounded). ``types`` (default: from A's and B's dtypes) sets the unit
    roundoff (microkernel.dtypes); an integer GEMM's reference is exact int64 arithmetic
    wrapped to int32, and its bound is 0 (the result must be exact)."""
    from .dtypes import get, types_of
    t = get(types) if types is not None else types_of(A.dtype, B.dtype)
    m, k = A.shape
    n = B.shape[1]
    if t.integer:
        ref = np.zeros((m, n), dtype=np.int64)
        if alpha != 0 and k > 0:
            ref += int(alpha) * _int_matmul(A, B)
        if beta != 0:
            ref += int(beta) * C0.astype(np.int64)
        return ref.astype(np.int32).astype(np.float64), np.zeros((m, n))
    C_ref = np.zeros((m, n))
    bound = np.zeros((m, n))
    if alpha != 0 and k > 0:
        A64, B64 = A.astype(np.float64), B.astype(np.float64)
        C_ref += alpha * (A64 @ B64)
        bound += abs(alpha) * (np.abs(A64) @ np.abs(B64))
    if beta != 0:
        C_ref += beta * C0.astype(np.float64)
        bound += abs(beta) * np.abs(C0.astype(np.float64))
    bound *= C_BOUND * (k + 2) * t.u
    if t.result_rounding:
        bound += t.result_rounding * np.abs(C_ref)
    return C_ref, bound


def check(C, C_ref, bound, base_c=None, mask_c=None) -> tuple[bool, float, bool, str]:
    """(ok, err_ratio, guard_ok, detail) for a computed C."""
    Cd = np.asarray(C, dtype=np.float64)
    detail = []
    if Cd.shape != C_ref.shape:
        return False, np.inf, True, f"shape {Cd.shape} != {C_ref.shape}"
    finite = np.isfinite(Cd)
    if not finite.all():
        detail.append(f"{int((~finite).sum())} non-finite values")
    err = np.abs(Cd - C_ref)
    # tiny floor so exact-zero bounds accept exact results only
    ratio = float(np.max(err / np.maximum(bound, 1e-300), initial=0.0)) if Cd.size else 0.0
    if not finite.all():
        ratio = np.inf
    guard_ok = True
    if base_c is not None:
        outside = base_c[~mask_c]
        bad = outside != (GUARD_INT if base_c.dtype.kind == "i" else GUARD)
        if bad.any():
            guard_ok = False
            detail.append(f"{int(bad.sum())} guard values overwritten")
    ok = ratio <= 1.0 and guard_ok
    if ratio > 1.0 and np.isfinite(ratio):
        i, j = np.unravel_index(np.argmax(err / np.maximum(bound, 1e-300)), err.shape)
        detail.append(f"max error at ({i},{j}): got {Cd[i, j]:.7g}, want {C_ref[i, j]:.7g}")
    return ok, ratio, guard_ok, "; ".join(detail)


def run_case(kernel, case: Case, seed: int = 0) -> Result:
    """Run one case through ``microkernel.gemm`` with ``kernel`` (a loaded Kernel)."""
    from .blocking import Blocking
    from .gemm import gemm
    rng = np.random.default_rng(seed)
    types = kernel.spec.types
    A, B, C, C0, base_c, mask_c = make_operands(case, rng, types)
    blk = None
    if case.blocking is not None:
        blk = Blocking(*case.blocking, why=("catalogue override",))
    try:
        out = gemm(A, B, C, alpha=case.alpha, beta=case.beta, kernel=kernel,
                   threads=case.threads, blocking=blk)
    except Exception as exc:  # a kernel bug surfaces as a failed case, not a crash
        return Result(kernel.label, case, False, np.inf, True, f"{type(exc).__name__}: {exc}")
    if out is not C:
        return Result(kernel.label, case, False, np.inf, True, "gemm did not return C")
    C_ref, bound = reference(A, B, C0, case.alpha, case.beta, types)
    ok, ratio, guard_ok, detail = check(C, C_ref, bound, base_c, mask_c)
    return Result(kernel.label, case, ok, ratio, guard_ok, detail)


def catalogue_for(kernel, quick: bool = False) -> list[Case]:
    """The catalogue for a loaded kernel, with its real KC from the blocking model; where
    one-thread calls from K = CSTAT_MIN_K block otherwise (AMX: the C-stationary loops'
    KC1), also K = CSTAT_MIN_K + KC1 -/+ 1 (a last KC block of KC1 - 1 and of 1 there)."""
    from .blocking import CSTAT_MIN_K
    from .gemm import blocking_for
    kgroup = int(kernel.lib.mk_kgroup()) if hasattr(kernel.lib, "mk_kgroup") else 1
    kc, kc1 = blocking_for(kernel).kc, blocking_for(kernel, 1, CSTAT_MIN_K).kc
    extra = () if kc1 == kc else (CSTAT_MIN_K + kc1 - 1, CSTAT_MIN_K + kc1 + 1)
    return catalogue(kernel.mr, kernel.nr, kernel.spec.k_unroll, kc, quick=quick,
                     kgroup=kgroup, types=kernel.spec.types, extra_ks=extra)


def run_catalogue(kernel, quick: bool = False) -> list[Result]:
    return [run_case(kernel, case, seed=i) for i, case in enumerate(catalogue_for(kernel, quick))]
