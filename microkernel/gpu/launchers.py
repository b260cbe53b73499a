"""The launchers of the warp-tiled kernel, below numba's dispatcher, and its split-K buffers.

* :class:`DriverLauncher`: ``cuda.bindings.driver.cuLaunchKernel`` on parameters packed
  once into 8-byte slots (CUDA Driver API, "Execution Control", ``cuLaunchKernel``:
  ``kernelParams`` is an array of N pointers to the parameter values, copied at the
  launch); the caller rewrites the slots that change between calls;
* :class:`CoreLauncher`: ``cuda.core.launch`` with the parameters packed by the caller
  per call (what numba's ``_Kernel.launch`` does after its argument checks);
* :func:`arr_params` / :func:`vec_params`: numba's kernel parameters for an array
  (its ABI: meminfo, parent, size, itemsize, data, shape, strides);
* :func:`split_buffers`: the split-K workspace and tile counts of a launch;
* :func:`reduce_driver` / :func:`reduce_core`: the two launchers for the split-K
  reduction kernel (:mod:`microkernel.gpu.simt_splitk`).

:class:`microkernel.gpu.launch.Runner` picks the first that can be set up.
"""
from __future__ import annotations

import numpy as np

from .tiles import GpuTile

__all__ = ["DriverLauncher", "GraphLauncher", "CoreLauncher", "arr_params", "vec_params",
           "split_buffers", "reduce_driver", "reduce_core"]


def _overload(dispatcher, signature: str):
    """The compiled kernel of ``dispatcher`` for ``signature`` (compiled on first use)."""
    from numba.cuda.core import sigutils
    dispatcher.compile(signature)
    args, _ = sigutils.normalize_signature(signature)
    return dispatcher.overloads[tuple(args)]


def arr_params(ptr: int, rows: int, cols: int) -> tuple:
    """numba's kernel parameters for a C-contiguous float32 (rows, cols) array:
    meminfo, parent, size, itemsize, data, shape, strides (bytes)."""
    return (0, 0, rows * cols, 4, ptr, rows, cols, cols * 4, 4)


class CoreLauncher:
    """``cuda.core.launch`` of one compiled numba kernel with parameters packed by
    the caller (what numba's ``_Kernel.launch`` does after its argument checks)."""

    def __init__(self, dispatcher, signature: str):
        from numba.cuda import dispatcher as nd
        from numba.cuda.cudadrv import driver
        self.kernel = _overload(dispatcher, signature)._codelibrary.get_cufunc().kernel
        self._launch = nd.launch
        self._config = nd.LaunchConfig
        self._coop = ({"is_cooperative": False} if getattr(nd, "CUDA_CORE_GE_1_0", True)
                      else {"cooperative_launch": False})
        self.stream = driver._to_core_stream(0)

    def config(self, grid, block):
        return self._config(grid=tuple(grid), block=(block, 1, 1), shmem_size=0,
                            **self._coop)

    def __call__(self, config, params):
        self._launch(self.stream, config, self.kernel, *params)


class DriverLauncher:
    """``cuLaunchKernel`` of one compiled numba kernel on parameters packed once.

    ``slots`` (numpy uint64, one 8-byte slot per kernel parameter: numba passes an
    array as its 5 + 2*ndim fields, all 8 bytes; a float32 or uint32 scalar sits in
    the low 4 bytes of its slot, little-endian) holds the values and ``_ptrs`` the
    address of each slot, the ``void **kernelParams`` of ``cuLaunchKernel``, which
    copies the values at the launch. Set slots with :meth:`set_int` and
    :meth:`set_f32` before :meth:`__call__`.
    """

    def __init__(self, dispatcher, signature: str, grid, block: int, nparams: int):
        from cuda.bindings import driver as cu
        kern = _overload(dispatcher, signature)
        self.handle = kern._codelibrary.get_cufunc().handle   # CUkernel (cuLibraryGetKernel)
        self._cu = cu
        self._ok = cu.CUresult.CUDA_SUCCESS
        self.slots = np.zeros(nparams, np.uint64)
        self._f32 = self.slots.view(np.float32)
        base = self.slots.ctypes.data
        self._ptrs = np.array([base + 8 * i for i in range(nparams)], np.uint64)
        self._pp = int(self._ptrs.ctypes.data)
        self._dims = (*(int(g) for g in grid), int(block), 1, 1)
        self._stream = cu.CUstream(0)                           # the legacy default stream

    def set_int(self, i: int, v: int) -> None:
        self.slots[i] = v

    def set_f32(self, i: int, v: float) -> None:
        self._f32[2 * i] = v

    def __call__(self) -> None:
        err, = self._cu.cuLaunchKernel(self.handle, *self._dims, 0, self._stream,
                                       self._pp, 0)
        if err != self._ok:
            raise RuntimeError(f"cuLaunchKernel failed: {err!r}")

    def node_params(self):
        """``CUDA_KERNEL_NODE_PARAMS`` of this launch (the kernel by its CUkernel
        handle in the current context, the slots' addresses as ``kernelParams``,
        whose values are copied when a graph node is created or updated)."""
        p = self._cu.CUDA_KERNEL_NODE_PARAMS()
        (p.gridDimX, p.gridDimY, p.gridDimZ, p.blockDimX, p.blockDimY,
         p.blockDimZ) = self._dims
        p.sharedMemBytes = 0
        if isinstance(self.handle, self._cu.CUfunction):
            p.func = self.handle
        else:
            p.kern = self.handle
        p.kernelParams = self._pp
        return p


class GraphLauncher:
    """Several :class:`DriverLauncher` launches, in order, as one CUDA graph: one
    ``cuGraphLaunch`` on the host instead of one ``cuLaunchKernel`` each (CUDA Driver
    API, "Graph Management"). The nodes hold copies of the launchers' parameter
    values: after changing their slots, :meth:`update` (``cuGraphExecKernelNodeSetParams``
    per node) before the next call."""

    def __init__(self, launchers):
        self.launchers = tuple(launchers)
        cu = self.launchers[0]._cu
        self._cu, self._ok = cu, cu.CUresult.CUDA_SUCCESS
        self._stream = self.launchers[0]._stream
        err, self._graph = cu.cuGraphCreate(0)
        self._check(err, "cuGraphCreate")
        self.nodes = []
        for d in self.launchers:
            deps = self.nodes[-1:]
            err, node = cu.cuGraphAddKernelNode(self._graph, deps, len(deps), d.node_params())
            self._check(err, "cuGraphAddKernelNode")
            self.nodes.append(node)
        err, self._exec = cu.cuGraphInstantiate(self._graph, 0)
        self._check(err, "cuGraphInstantiate")

    def _check(self, err, what: str) -> None:
        if err != self._ok:
            raise RuntimeError(f"{what} failed: {err!r}")

    def update(self) -> None:
        for d, node in zip(self.launchers, self.nodes):
            err, = self._cu.cuGraphExecKernelNodeSetParams(self._exec, node, d.node_params())
            self._check(err, "cuGraphExecKernelNodeSetParams")

    def __call__(self) -> None:
        err, = self._cu.cuGraphLaunch(self._exec, self._stream)
        self._check(err, "cuGraphLaunch")


_ONE_COUNT: list = []    # the count array of every unsplit launch (never read)


def split_buffers(tile: GpuTile, m: int, n: int, split: int) -> tuple:
    """(W, T) for a launch of ``tile`` on an m x n C split ``split`` ways: the
    workspace ((split*m) x n float32; None when not split) and the tile counts
    (uint32 zeros, one per block tile; when not split the kernel does not read
    them, and one 1-element array serves every such launch)."""
    from .kernel import _import_cuda
    cuda = _import_cuda()
    if split == 1:
        if not _ONE_COUNT:
            _ONE_COUNT.append(cuda.to_device(np.zeros(1, np.uint32)))
        return None, _ONE_COUNT[0]
    gx, gy = tile.grid(m, n)
    return (cuda.device_array((split * m, n), np.float32),
            cuda.to_device(np.zeros(gx * gy, np.uint32)))


def vec_params(ptr: int, size: int) -> tuple:
    """numba's kernel parameters for a contiguous uint32 vector of ``size``."""
    return (0, 0, size, 4, ptr, size, 4)


def reduce_driver(reducer, m: int, n: int, vec: bool, wparams: tuple) -> DriverLauncher:
    """A :class:`DriverLauncher` of the split-K reduction kernel ``reducer`` for an
    m x n C, W's parameters (``wparams``) packed; the caller sets C (slots 9-17, data
    the 13th), alpha (18) and beta (19) per call."""
    from .simt_splitk import REDUCE_SIGNATURE, REDUCE_THREADS, reduce_grid
    r = DriverLauncher(reducer, REDUCE_SIGNATURE, (reduce_grid(m, n, vec), 1, 1),
                       REDUCE_THREADS, 20)
    for i, v in enumerate(wparams + arr_params(0, m, n)):
        r.set_int(i, v)
    return r


def reduce_core(reducer, m: int, n: int, vec: bool) -> tuple:
    """(:class:`CoreLauncher`, its launch config) of the split-K reduction kernel for
    an m x n C; parameters per call: W's, C's, alpha, beta."""
    from .simt_splitk import REDUCE_SIGNATURE, REDUCE_THREADS, reduce_grid
    r = CoreLauncher(reducer, REDUCE_SIGNATURE)
    return r, r.config((reduce_grid(m, n, vec), 1, 1), REDUCE_THREADS)
