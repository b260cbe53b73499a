"""``gemm()``: the front end. Checks arguments, picks a kernel, calls the C driver."""
from __future__ import annotations

import numbers

import numpy as np

from . import envvars
from .blocking import CSTAT_MAX_B, CSTAT_MIN_K, Blocking, cstat_b_bytes, model_blocking
from .dispatch import get_kernel

_Kernel = None  # microkernel.kernel.Kernel, imported on first use: importing this module
                # must not need cffi (the GPU side imports the package without it)

__all__ = ["gemm", "blocking_for", "default_threads"]


from .threads import check_count, contended, contention_on, default_threads, threads_for  # noqa: E402  (public: gemm.default_threads)


_BLOCKING: dict = {}


def blocking_for(kernel, threads: int | None = None, k: int | None = None,
                 n: int | None = None) -> Blocking:
    """The analytical-model blocking (KC, MC, NC) for a loaded kernel on this machine,
    for a call of ``threads`` threads (None: more than one), depth ``k`` (None: as for a
    K of at least :data:`~microkernel.blocking.CSTAT_MIN_K`) and ``n`` columns (None: a
    B that the C-stationary loops take). One thread of an fp32 tile gets an NC whose B
    block fits its L2 where the L2 is large enough (:func:`microkernel.blocking.model_blocking`,
    ``alone``). One thread of an AMX kernel whose module has the
    C-stationary loops with the whole-ir-loop entry point (``MK_UKERNEL_IRLOOP``: every
    generated one), at K >= CSTAT_MIN_K with a packed B of at most
    :data:`~microkernel.blocking.CSTAT_MAX_B` bytes (the driver's bound for those loops),
    gets their own blocking (:func:`microkernel.blocking.model_blocking`, ``cstat``)."""
    from .blocking import panel_bytes
    sizes = panel_bytes(kernel.spec)       # typed panels: 2-byte bf16, 1-byte int8, ...
    l2_panels = kernel.spec.isa == "amx"   # tile registers: micro-panels from L2
    cstat = (l2_panels and threads == 1 and (k is None or k >= CSTAT_MIN_K)
             and (n is None or _cstat_fits(kernel, n, k)) and _has_irloop(kernel))
    # one thread of an fp32 tile: its B block in its own core's L2 where that fits
    alone = threads == 1 and not l2_panels and kernel.spec.types == "f32"
    key = (kernel.mr, kernel.nr, sizes, l2_panels, cstat, alone)
    if key not in _BLOCKING:
        from .probe import probe
        _BLOCKING[key] = model_blocking(kernel.mr, kernel.nr, probe().caches, *sizes,
                                        l2_panels=l2_panels, cstat=cstat, alone=alone)
    return _BLOCKING[key]


def _cstat_fits(kernel, n: int, k: int | None) -> bool:
    """Whether the driver would take the C-stationary loops' packed B for n columns of
    depth k (None: CSTAT_MIN_K): at most CSTAT_MAX_B bytes, with 1% to spare. True for
    a kernel other than AMX, whose blocking does not depend on it."""
    if kernel.spec.isa != "amx":
        return True
    return cstat_b_bytes(kernel.spec, n, CSTAT_MIN_K if k is None else k) * 101 // 100 <= CSTAT_MAX_B


def _has_irloop(kernel) -> bool:
    """Whether kernel's module has the C-stationary loops with their whole-ir-loop entry
    point (:func:`microkernel.codegen.c_stationary_irloop`: a generated AMX micro-kernel
    does; a user's source where it defines both); False for a source it cannot read."""
    from .codegen import c_stationary_irloop
    text = None
    if kernel.source is not None:
        try:
            with open(kernel.source, encoding="utf-8") as fh:
                text = fh.read()
        except OSError:
            return False
    return c_stationary_irloop(kernel.spec, text)


_F32 = np.dtype(np.float32)


def _check_operand(name: str, x) -> None:
    if type(x) is np.ndarray and x.dtype is _F32 and x.ndim == 2:
        return  # the common case in a few attribute reads (a small call costs microseconds)
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(x).__name__}")
    not_masked(name, x)
    if x.dtype != np.float32:
        raise TypeError(f"{name} has dtype {x.dtype}; gemm computes in float32 "
                        f"(convert with {name}.astype(numpy.float32))")
    if x.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got {x.ndim}-D with shape {x.shape}")


def not_masked(name: str, x) -> None:
    """TypeError for a numpy masked array: gemm() would read the values under the mask."""
    if isinstance(x, np.ma.MaskedArray):
        raise TypeError(f"{name} is a masked array; gemm() would use the values under its "
                        f"mask: pass {name}.filled(0) (or {name}.data to use them)")


def overlaps_itself(x: np.ndarray) -> bool:
    """Whether two elements of the 2-D array x share bytes (a view made with
    as_strided, or a stride of 0 on an axis longer than 1): exact for 2-D, O(one
    extent) when the strides interleave, O(1) otherwise."""
    if x.flags.c_contiguous or x.flags.f_contiguous or x.size <= 1:
        return False
    e = x.itemsize
    if x.ndim == 2:                       # a row-major slice of a wider array: O(1)
        s0, s1 = x.strides
        if s1 == e and s0 >= e * x.shape[1]:
            return False
    axes = sorted((abs(s), d) for s, d in zip(x.strides, x.shape) if d > 1)
    if len(axes) == 1:
        return axes[0][0] < e
    (a, da), (b, db) = axes
    if a < e:
        return True
    if b >= a * da:
        return False                      # the larger stride steps past the whole axis
    # |b dj - a di| < e for some 0 < dj < db, 0 <= di < da (b >= a >= e covers the rest)
    t = b * np.arange(1, db, dtype=np.int64)
    for di in (t // a, t // a + 1):
        if np.any((di < da) & (np.abs(t - a * di) < e)):
            return True
    return False


def _scalar(name: str, v) -> float:
    """v as a float (gemm() calls this only when v is not already one)."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(v).__name__}")
    return float(v)


def _native(x: np.ndarray) -> bool:
    """True when the C driver can read x in place: 4-byte-aligned data, strides in
    whole elements. numpy's ALIGNED flag checks both but ignores the stride of an
    axis of length 1 (never multiplied by a non-zero index, so its truncation to
    elements is harmless); the test by hand covers arrays without the flag."""
    if x.flags.aligned:
        return True
    return x.ctypes.data % 4 == 0 and all(s % 4 == 0 for s in x.strides)


def _ptr(ffi, x: np.ndarray):
    """``float *`` to x's first element (the fast buffer path for contiguous arrays)."""
    flags = x.flags
    if flags.c_contiguous:
        return ffi.from_buffer("float[]", x)
    if flags.f_contiguous:
        return ffi.from_buffer("float[]", x.T)
    return ffi.cast("float *", x.ctypes.data)


_DEFAULT: dict = {}
_CBLOCKING: dict = {}
_OVERRIDES: dict = {}  # (id(kernel), dict items) -> mk_blocking *; the kernel stays
                      # alive in _PLANS, so its id is not reused. One entry per distinct
                      # override (a few dozen bytes): a tuner trying thousands of them
                      # holds thousands of entries, as _CBLOCKING does for Blocking objects
_PLANS: dict = {}  # (id(kernel), the one-thread blocking) -> (kernel, ffi, lib,
                   # model mk_blocking *); holding the kernel keeps its id from being
                   # reused while the entry exists


def _c_blocking(ffi, blk: Blocking):
    """``mk_blocking *`` for blk in ffi's module (cdata types differ between modules)."""
    key = (id(ffi), blk.kc, blk.mc, blk.nc, blk.chunks, blk.parts)
    cblk = _CBLOCKING.get(key)
    if cblk is None:
        cblk = _CBLOCKING[key] = ffi.new("mk_blocking *", (blk.kc, blk.mc, blk.nc, blk.chunks,
                                                           blk.parts))
    return cblk


def _override(kern, ffi, blocking: dict, one: bool = False):
    """``mk_blocking *`` for the model's blocking (of one thread with ``one``) with
    ``blocking`` (a dict) applied, cached per kernel and dict contents (a call with an
    override then costs a lookup, not a Blocking.replace); values of an unhashable type
    go to replace(), which names them."""
    try:
        key = (id(kern), one, tuple((name, type(v), v) for name, v in blocking.items()))
        cblk = _OVERRIDES.get(key)
    except TypeError:
        key = cblk = None
    if cblk is None:
        cblk = _c_blocking(ffi, blocking_for(kern, 1 if one else None).replace(**blocking))
        if key is not None:
            _OVERRIDES[key] = cblk
    return cblk


def _plan(kern, one: bool):
    """(ffi, lib, model blocking as ``mk_blocking *``) for a loaded kernel, for a call of
    one thread (``one``: any K for a tile other than AMX, K >= CSTAT_MIN_K for AMX) or
    any other, cached."""
    plan = _PLANS.get((id(kern), one))
    if plan is None:
        ffi = kern.ffi
        plan = _PLANS[(id(kern), one)] = (kern, ffi, kern.lib,
                                          _c_blocking(ffi, blocking_for(kern, 1 if one else None)))
    return plan[1:]


def _driver(kern, blocking, threads: int = 0, k: int = 0, n: int = 0):
    """(ffi, lib, ``mk_blocking *``) for a call of kern's driver with ``threads``
    threads, depth ``k`` and ``n`` columns: the blocking is the model's
    (:func:`blocking_for`), or ``blocking`` (a Blocking, or a dict of overrides of the
    model's) when given."""
    one = threads == 1 and (kern.spec.isa != "amx" or (k >= CSTAT_MIN_K
                                                       and _cstat_fits(kern, n, k)))
    ffi, lib, cblk = _plan(kern, one)
    if isinstance(blocking, dict):
        cblk = _override(kern, ffi, blocking, one)
    elif isinstance(blocking, Blocking):
        cblk = _c_blocking(ffi, blocking)
    elif blocking is not None:
        raise TypeError(f"blocking must be a Blocking or a dict, not {type(blocking).__name__}")
    return ffi, lib, cblk


def _dims(A, B) -> tuple[int, int, int]:
    """(m, n, k) of A @ B (2-D arrays); ValueError when A's columns are not B's rows."""
    m, k = A.shape
    k2, n = B.shape
    if k != k2:
        raise ValueError(f"shape mismatch: A is {A.shape} and B is {B.shape}; "
                         f"A's columns ({k}) must equal B's rows ({k2})")
    return m, n, k


def _check_output(C, A, B, m: int, n: int) -> None:
    """ValueError unless C (an array of the right dtype) can take A @ B: shape (m, n),
    writeable, sharing no memory with A or B."""
    if C.shape != (m, n):
        raise ValueError(f"shape mismatch: C is {C.shape}, expected {(m, n)} "
                         f"for A {A.shape} @ B {B.shape}")
    if not C.flags.writeable:
        raise ValueError("C is not writeable")
    if C.base is None and A.base is None and B.base is None and C is not A and C is not B:
        return  # three arrays that own their memory: distinct buffers (the common case)
    if overlaps_itself(C):
        raise ValueError(f"C's elements overlap in memory (strides {C.strides} for shape "
                         f"{C.shape}, e.g. a view made with as_strided); pass an array "
                         f"whose elements are distinct")
    for name, X in (("A", A), ("B", B)):
        if (X.size and C.size and np.may_share_memory(C, X)
                and np.shares_memory(C, X, max_work=10**6)):
            raise ValueError(f"C overlaps {name} in memory; gemm needs C distinct "
                             f"from its inputs")


def _check_rc(rc: int) -> None:
    """The driver's return code as an exception: -1 MemoryError, other non-zero
    ValueError."""
    if rc == -1:
        raise MemoryError("gemm: the packing workspace could not be allocated")
    if rc != 0:
        raise ValueError(f"gemm: the driver rejected its arguments (code {rc})")


def _kernel(kernel):
    global _Kernel
    if _Kernel is None:
        from .kernel import Kernel
        _Kernel = Kernel
    if isinstance(kernel, _Kernel):
        return kernel
    if kernel is None:  # the default, per MICROKERNEL_ISA value
        key = envvars.get("MICROKERNEL_ISA")
        if key not in _DEFAULT:
            _DEFAULT[key] = get_kernel(None)
        return _DEFAULT[key]
    return get_kernel(kernel)


def _if_contended(threads: int, macs: int) -> int:
    """A default count ``threads`` for a call of ``macs`` multiply-adds:
    :func:`microkernel.threads.contended` with the pool workers of every loaded kernel
    module as ours (:func:`microkernel.kernel.pool_threads`) when
    ``$MICROKERNEL_CONTENTION=1`` (the pools are not asked otherwise), else ``threads``."""
    if threads > 1 and contention_on():
        from .kernel import pool_threads
        return contended(threads, macs, pool_threads(1), pool_threads(0))
    return threads


def gemm(A, B, C=None, *, alpha=1.0, beta=0.0, kernel=None, threads=None,
         blocking=None):
    """C := alpha * A @ B + beta * C, with BLAS semantics.

    Parameters
    ----------
    A : ndarray, float32, shape (m, k)
    B : ndarray, float32, shape (k, n)
        Any 2-D views: transposed, sliced, negative strides, unaligned. bfloat16
        (``ml_dtypes.bfloat16``), float16, int8 and uint8 inputs go to
        :func:`microkernel.gemm_typed.gemm_typed` (float32 C, or int32 C for integers;
        :mod:`microkernel.dtypes` has the pairs, accumulators and error bounds; the
        AVX512-BF16 tiles read bf16 denormals as zero, as vdpbf16ps does).
    C : ndarray, float32, shape (m, n), optional
        Updated in place and returned. None: a new array (then beta must be 0). Its
        elements must be distinct in memory and apart from A's and B's.
    alpha, beta : real
        beta == 0 never reads C (NaN/Inf there do not survive); alpha == 0 never
        reads A or B; k == 0 gives beta*C; m == 0 or n == 0 touches nothing.
    kernel : str, TileSpec or Kernel, optional
        Tile to use (``"avx512_8x16"``); default: the best for this machine
        (``MICROKERNEL_ISA`` may force the ISA).
    threads : int, optional
        Threads in the driver, 1 to :func:`microkernel.threads.max_threads` (8 per CPU,
        at least 64); default: the CPUs this process may run on
        (``$MICROKERNEL_NUM_THREADS`` or a threadpoolctl limit override it), fewer for
        a small problem (:func:`microkernel.threads.threads_for`).
    blocking : Blocking or dict, optional
        KC/MC/NC override (and ``chunks``, a team's units per thread: 0 a fixed share
        of rows each; ``parts``, the parts of a B block's columns the units split, 0
        the fewest that give each unit MC rows);
        default from the analytical model on the probed caches.

    Returns
    -------
    ndarray: C.

    Raises
    ------
    TypeError
        Operand not a float32 ndarray (or a masked array); alpha/beta not real.
    ValueError
        Wrong ndim, shape mismatch, C not writeable, C overlapping A, B or itself,
        beta != 0 without C, bad threads/blocking.
    IsaUnavailableError, TileError
        From kernel selection (see ``microkernel.get_kernel``).
    """
    if (isinstance(A, np.ndarray) and isinstance(B, np.ndarray)   # (memmaps included)
            and not (A.dtype is _F32 and B.dtype is _F32)      # the fast test first
            and (A.dtype != _F32 or B.dtype != _F32)):
        from .gemm_typed import gemm_typed                   # bf16, fp16, int8 inputs
        return gemm_typed(A, B, C, alpha=alpha, beta=beta, kernel=kernel,
                          threads=threads, blocking=blocking)
    _check_operand("A", A)
    _check_operand("B", B)
    if type(alpha) is not float:
        alpha = _scalar("alpha", alpha)
    if type(beta) is not float:
        beta = _scalar("beta", beta)
    m, n, k = _dims(A, B)
    if C is None:
        if beta != 0.0:
            raise ValueError(f"beta={beta} needs an input C; pass C or use beta=0")
        C = np.empty((m, n), dtype=np.float32)
    else:
        _check_operand("C", C)
        _check_output(C, A, B, m, n)
    auto = threads is None
    if auto:
        threads = threads_for(m, n, k)
    elif type(threads) is not int or not 1 <= threads <= 64:
        threads = check_count(threads)
    if m == 0 or n == 0:
        return C

    kern = _kernel(kernel)
    if kern.spec.types != "f32":
        raise TypeError(f"kernel {kern.name} takes {kern.spec.gemm_types.a} inputs, but A "
                        f"and B are float32; use an fp32 tile (or convert A and B)")
    ffi, lib, cblk = _driver(kern, blocking, threads, k, n)
    if auto:
        threads = _if_contended(threads, m * n * k)

    # Views the driver cannot address element-wise (misaligned data, strides that are
    # not whole elements) go through aligned copies.
    if not _native(A):
        A = np.ascontiguousarray(A)
    if not _native(B):
        B = np.ascontiguousarray(B)
    out = C if _native(C) else (np.array(C, order="C") if beta != 0.0 else np.empty((m, n), np.float32))

    sa, sb, sc = A.strides, B.strides, out.strides
    rc = lib.mk_gemm(m, n, k, alpha,
                     _ptr(ffi, A), sa[0] // 4, sa[1] // 4,
                     _ptr(ffi, B), sb[0] // 4, sb[1] // 4,
                     beta, _ptr(ffi, out), sc[0] // 4, sc[1] // 4,
                     cblk, int(threads))
    _check_rc(rc)
    if out is not C:
        C[...] = out
    return C
