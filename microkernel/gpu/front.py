"""The checked front end :func:`gemm`: argument checks, the launch plan, the launch.

By default (``tile=None``) :func:`gemm` is *shape-adaptive*: the planner of
:mod:`microkernel.gpu.launch` picks the tile and the split-K factor for (m, n, k)
on the current GPU, and the choice is kept in ``gemm.last_plan`` (a
:class:`~microkernel.gpu.launch.LaunchPlan`). On device arrays the call costs a few
microseconds of host time beyond the kernel: the operands' shapes, dtypes and
pointers are read from their ``__cuda_array_interface__`` (from a PyTorch tensor's own
attributes: torch rebuilds that interface on every read), the plan, the compiled
kernel and its launch configuration come from a cache keyed by (shape, tile,
split, variant), and the plan's kernels are launched as one CUDA graph on parameters
packed once per plan (:mod:`microkernel.gpu.launch`; ``bench/gpu_simt.py``
measures this overhead). Kernels run on the default
(legacy) stream.
"""
from __future__ import annotations

import numbers

import numpy as np

from .kernel import SgemmKernel, _import_cuda, _resolve_tile
from .tiles import GpuTile
from . import launch as _launch

__all__ = ["gemm", "vec_ok", "device_info"]


_KINDS: dict = {}


def _kind(x) -> str | None:
    """How to read an operand, cached by type: "numpy", "numba" (numba's device
    arrays), "sim" (the simulator's), "cupy", "torch" (PyTorch tensors: on a CUDA
    device or not, :func:`_check_matrix` says), "cai" (any other
    ``__cuda_array_interface__`` object), or None."""
    t = type(x)
    k = _KINDS.get(t)
    if k is None:
        if isinstance(x, np.ndarray):
            k = "numpy"
        elif hasattr(x, "gpu_data") and hasattr(x, "is_c_contiguous"):
            k = "numba"
        elif hasattr(x, "_ary") and hasattr(x, "copy_to_host"):
            k = "sim"
        elif t.__module__.startswith("cupy") and hasattr(x, "data") and hasattr(x, "flags"):
            k = "cupy"
        elif (t.__module__.split(".")[0] == "torch" and hasattr(x, "data_ptr")
              and hasattr(x, "is_cuda")):
            k = "torch"
        elif hasattr(x, "__cuda_array_interface__"):
            k = "cai"
        else:
            return None
        _KINDS[t] = k
    return k


def _is_device(x) -> bool:
    """A CUDA device array: numba's (the simulator's too) or any object with
    ``__cuda_array_interface__`` (CuPy, PyTorch, ...)."""
    k = _kind(x)
    return k not in (None, "numpy") and (k != "torch" or x.is_cuda)


def _as_device(x):
    cuda = _import_cuda()
    if hasattr(x, "copy_to_host"):          # already a numba device array
        return x
    return cuda.as_cuda_array(x)            # zero-copy view of a CAI object


def _meta(x, kind: str, cai=None):
    """(data pointer, C-contiguous) of a device array of the given kind (``cai``: its
    ``__cuda_array_interface__`` already read, else read here)."""
    if kind == "numba":
        sh, st = x.shape, x.strides
        if len(sh) != 2 or x.dtype.itemsize != 4:
            contig = x.is_c_contiguous()
        else:                               # float32 matrices: from the attributes
            contig = ((sh[1] <= 1 or st[1] == 4) and (sh[0] <= 1 or st[0] == 4 * sh[1]))
        return x.gpu_data.device_pointer_value or 0, contig
    if kind == "cupy":
        return x.data.ptr, x.flags.c_contiguous
    if kind == "torch":                     # strides in elements; a 2-D float32 tensor
        sh, st = x.shape, x.stride()
        return x.data_ptr(), ((sh[1] <= 1 or st[1] == 1) and (sh[0] <= 1 or st[0] == sh[1]))
    ptr, _, contig = _cai_info(cai) if cai is not None else device_info(x)
    return ptr, contig


def device_info(x):
    """(data pointer, shape, C-contiguous) of a device array, from its
    ``__cuda_array_interface__`` (the simulator's arrays: from the numpy array
    they wrap)."""
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is None:                         # numba's simulator (FakeCUDAArray)
        a = x._ary
        return a.ctypes.data, a.shape, bool(a.flags.c_contiguous)
    return _cai_info(cai)


def _cai_info(cai):
    """(data pointer, shape, C-contiguous) from a ``__cuda_array_interface__`` dict."""
    shape = tuple(cai["shape"])
    st = cai.get("strides")
    contig = st is None or (len(shape) == 2 and (shape[0] <= 1 or st[0] == 4 * shape[1])
                            and (shape[1] <= 1 or st[1] == 4))
    return cai["data"][0], shape, contig


def vec_ok(A, B, C) -> bool:
    """Whether the warp-tiled kernel's float4 variant may run: K and N multiples of
    4 and the three operands' data 16-byte aligned."""
    k = A.shape[1]
    n = B.shape[1]
    if k % 4 or n % 4:
        return False
    return all(_meta(x, _kind(x))[0] % 16 == 0 for x in (A, B, C))


def _check_matrix(x, name: str):
    """(kind, shape, the ``__cuda_array_interface__`` of a "cai" operand, else None)
    of an operand, the interface read once (a read can cost microseconds); PyTorch
    tensors are read from their own attributes. TypeError/ValueError on bad input."""
    kind = _kind(x)
    if kind is None:
        raise TypeError(f"{name} must be a numpy array or a CUDA device array "
                        f"(__cuda_array_interface__), got {type(x).__name__}")
    cai = None
    if kind == "torch":                     # its own attributes, not the interface
        if not x.is_cuda:
            raise TypeError(f"{name} is a PyTorch tensor on {x.device}, not on a CUDA "
                            f"device (pass {name}.cuda(), or {name}.numpy())")
        if x.requires_grad:
            raise ValueError(f"{name} requires grad: gemm() is not differentiable "
                             f"(pass {name}.detach())")
        dt = str(x.dtype)
        dtype, shape = (np.dtype(np.float32) if dt == "torch.float32" else dt), tuple(x.shape)
    elif kind == "cai":                     # other libraries: dtype not a numpy dtype
        cai = x.__cuda_array_interface__
        dtype, shape = np.dtype(cai["typestr"]), tuple(cai["shape"])
    else:
        dtype, shape = x.dtype, x.shape
    if dtype != np.float32:
        raise TypeError(f"{name} must be float32, got {dtype}")
    if len(shape) != 2:
        raise ValueError(f"{name} must be 2-D, got {len(shape)}-D with shape {tuple(shape)}")
    return kind, tuple(shape), cai


_TILE_ARGS: dict = {}


def _tile_arg(tile):
    """(GpuTile or None for the shape-adaptive choice, SgemmKernel or None); CPU
    tile names and tuples are resolved once (the port's plan is not free)."""
    if tile is None:
        return None, None
    if isinstance(tile, GpuTile):
        return tile, None
    if isinstance(tile, SgemmKernel):
        return tile.tile, tile
    try:
        hit = _TILE_ARGS.get(tile)
    except TypeError:           # unhashable (a list)
        hit = None
    if hit is None:
        kern = _resolve_tile(tile)
        hit = (kern.tile, kern)
        try:
            _TILE_ARGS[tile] = hit
        except TypeError:
            pass
    return hit


def gemm(A, B, C=None, *, alpha: float = 1.0, beta: float = 0.0, tile=None,
         split: int | None = None):
    """C := alpha * A @ B + beta * C on the GPU (fp32), BLAS semantics.

    Parameters
    ----------
    A : (M, K) float32, numpy array or CUDA device array
    B : (K, N) float32, same kinds
    C : (M, N) float32, optional
        Updated in place and returned. None: a new (M, N) array is returned
        (numpy when A and B are numpy arrays, else a numba device array) and
        ``beta`` is ignored.
    alpha, beta : float
        Scalars (applied in float32). beta == 0: C is only written (NaN/Inf in C
        do not survive); alpha == 0 or K == 0: C := beta*C, A and B not read;
        M == 0 or N == 0: nothing is touched.
    tile : GpuTile | SgemmKernel | TileSpec | str | tuple, optional
        The kernel: a GPU tile, a built kernel, a CPU tile spec or name (ported by
        :func:`microkernel.gpu.port.plan`), or ``(tm, tn, bm, bn, bk)``. Default
        None: the shape-adaptive choice among
        :data:`microkernel.gpu.launch.AUTO_TILES`.
    split : int, optional
        Split-K factor (warp-tiled kernels only); default None: chosen by the
        planner for the shape (1 for a tile without a warp tile).

    Returns
    -------
    C (the argument, updated) or the new array. ``gemm.last_plan`` is the
    :class:`~microkernel.gpu.launch.LaunchPlan` used (None for a kernel without a
    warp tile, which launches as it did before warp tiling).

    Raises
    ------
    TypeError
        An operand that is not a numpy/device array or not float32 (a PyTorch tensor
        not on a CUDA device); non-real alpha/beta; a non-integer split.
    ValueError
        A PyTorch tensor that requires grad (gemm() is not differentiable: pass
        ``.detach()``), an operand that is not 2-D, inner dimensions that differ, C of
        the wrong shape, a read-only numpy C, split < 1, split > 1 with a tile that has
        no warp tile, or a grid beyond CUDA's limits.
    ImportError
        numba-cuda is not installed.
    """
    for nm, s in (("alpha", alpha), ("beta", beta)):
        if type(s) is float or type(s) is int:     # the common case, without ABC checks
            continue
        if not isinstance(s, numbers.Real) or isinstance(s, bool):
            raise TypeError(f"{nm} must be a real number, got {type(s).__name__}")
    if split is not None:
        if not isinstance(split, numbers.Integral) or isinstance(split, bool):
            raise TypeError(f"split must be an integer, got {type(split).__name__}")
        if split < 1:
            raise ValueError(f"split must be >= 1, got {split}")
    a_kind, (m, k), a_cai = _check_matrix(A, "A")
    b_kind, (kb, n), b_cai = _check_matrix(B, "B")
    a_dev, b_dev = a_kind != "numpy", b_kind != "numpy"
    if kb != k:
        raise ValueError(f"inner dimensions differ: A is {m}x{k}, B is {kb}x{n}")
    c_dev = False
    c_kind = c_cai = None
    if C is not None:
        c_kind, cshape, c_cai = _check_matrix(C, "C")
        c_dev = c_kind != "numpy"
        if cshape != (m, n):
            raise ValueError(f"C must be {m}x{n} for A {m}x{k} @ B {k}x{n}, got "
                             f"{cshape[0]}x{cshape[1]}")
        if not c_dev and not C.flags.writeable:
            raise ValueError("C is read-only")
    gtile, kern = _tile_arg(tile)
    if gtile is not None and not gtile.warp_tiled and split not in (None, 1):
        raise ValueError(f"{gtile.name} has no warp tile: the original kernel has no "
                         f"split-K (split must be 1 or None)")
    bm, bn = (gtile.bm, gtile.bn) if gtile is not None else (64, 64)
    if -(-m // bm) > 65535 or -(-n // bn) > 2**31 - 1:
        raise ValueError(f"M={m}, N={n} need a grid beyond CUDA's limits")
    if max(m, n, k) >= 2**32:
        raise ValueError("dimensions must be < 2**32 (32-bit index arithmetic)")
    if (gtile is None or gtile.warp_tiled) and max(m * k, k * n, m * n) >= 2**32:
        raise ValueError(f"{m}x{n}x{k}: with the warp-tiled kernel every operand must have "
                         f"fewer than 2**32 elements (32-bit flat indices)")
    cuda = _import_cuda()
    if C is None:
        beta = 0.0
        if m == 0 or n == 0:
            gemm.last_plan = None
            return (cuda.device_array((m, n), np.float32) if (a_dev or b_dev)
                    else np.zeros((m, n), np.float32))
    elif m == 0 or n == 0:
        gemm.last_plan = None
        return C

    if gtile is not None and not gtile.warp_tiled:
        gemm.last_plan = None
        return _legacy(kern or _resolve_tile(gtile), A, B, C, alpha, beta, a_dev, b_dev,
                       c_dev, m, n)

    alpha_zero = alpha == 0 or k == 0
    reads_c = beta != 0
    if a_dev and b_dev and (C is None or c_dev):
        # device arrays: the fast path (no copies, no numba dispatch)
        pa, ca = _meta(A, a_kind, a_cai)
        pb, cb = _meta(B, b_kind, b_cai)
        if ca and cb:                       # (else staged below, C as given)
            if C is None:
                C = cuda.device_array((m, n), np.float32)
                c_kind = _kind(C)
            pc, cc = _meta(C, c_kind, c_cai)
            if cc:
                variant = ("vec" if not (k % 4 or n % 4 or pa % 16 or pb % 16 or pc % 16)
                           else "scalar")
                r = _launch.runner(m, n, k, gtile, split, variant, alpha_zero, reads_c,
                                   _launch.device_limits())
                gemm.last_plan = r.plan
                if r.direct:
                    r.run_fast(pa, pb, pc, alpha, beta)
                else:
                    r.run(_as_device(A), _as_device(B), _as_device(C), alpha, beta)
                return C

    # numpy operands (or non-contiguous device arrays): stage through the device
    def to_dev(x, is_dev):
        if is_dev:
            d = _as_device(x)
            # a strided or transposed (Fortran-ordered) view: a C-ordered copy, which the
            # kernels' typed loads want (copy_to_host keeps the view's order)
            return d if device_info(d)[2] else cuda.to_device(
                np.ascontiguousarray(d.copy_to_host()))
        return cuda.to_device(np.ascontiguousarray(x))

    dA = to_dev(A, a_dev)
    dB = to_dev(B, b_dev)
    if C is None:
        dC = cuda.device_array((m, n), np.float32)
    elif c_dev:
        dC = _as_device(C)
        if not device_info(dC)[2]:
            raise ValueError("a device C must be C-contiguous")
    elif beta == 0:
        dC = cuda.device_array((m, n), np.float32)      # C is not read
    else:
        dC = cuda.to_device(np.ascontiguousarray(C))
    variant = "vec" if vec_ok(dA, dB, dC) else "scalar"
    r = _launch.runner(m, n, k, gtile, split, variant, alpha_zero, reads_c,
                       _launch.device_limits())
    gemm.last_plan = r.plan
    r.run(dA, dB, dC, alpha, beta)
    return _finish(C, dC, a_dev, b_dev, c_dev)


gemm.last_plan = None


def _finish(C, dC, a_dev, b_dev, c_dev):
    """The result of a launch into dC: dC itself when C is None and A or B lives on the
    device, else dC copied to the host (into C when given); a device C as it is."""
    if C is None:
        if a_dev or b_dev:
            return dC
        return dC.copy_to_host()
    if c_dev:
        return C
    if C.flags.c_contiguous:
        dC.copy_to_host(C)
    else:
        C[...] = dC.copy_to_host()
    return C


def _legacy(kern: SgemmKernel, A, B, C, alpha, beta, a_dev, b_dev, c_dev, m, n):
    """The original kernel (no warp tile, no split-K), as before warp tiling."""
    cuda = _import_cuda()

    def to_dev(x, is_dev):
        return _as_device(x) if is_dev else cuda.to_device(np.ascontiguousarray(x))

    dA = to_dev(A, a_dev)
    dB = to_dev(B, b_dev)
    if C is None:
        dC = cuda.device_array((m, n), np.float32)
    elif c_dev:
        dC = to_dev(C, True)
    elif beta == 0:
        dC = cuda.device_array((m, n), np.float32)
    else:
        dC = cuda.to_device(np.ascontiguousarray(C))
    kern.launch(dA, dB, dC, alpha, beta)
    return _finish(C, dC, a_dev, b_dev, c_dev)
