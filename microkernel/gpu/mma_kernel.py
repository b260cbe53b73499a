"""The tensor-core GEMM kernel: ``mma.sync`` fragments, ``ldmatrix``, ``cp.async``.

One generated numba kernel per :class:`~microkernel.gpu.mma_tile.MmaTile`
(closure constants, unsigned 32-bit indices, constant trip counts so the
accumulators stay in registers, as in :mod:`microkernel.gpu.kernel`). Per thread
block (BM x BN of C) and per BK slice of K:

1. **global -> shared**: every thread issues ``a_chunks/threads`` +
   ``b_chunks/threads`` 16-byte ``cp.async`` copies into stage ``slice % stages``
   (src-size < 16 zero-fills the A/B edges: any M, N, K), then
   ``cp.async.commit_group``; ``stages - 1`` slices are in flight while one is
   computed (``cp.async.wait_group stages-2`` + one ``syncthreads`` per slice).
2. **shared -> registers**: per instruction k step, each warp loads its MI A
   fragments with ``ldmatrix.x4`` and its NI B fragments with
   ``ldmatrix.x4.trans`` (f16/bf16) or 32-bit shared loads (tf32), at the lane
   addresses of :mod:`microkernel.gpu.mma_tile` (padding or XOR swizzle).
3. **mma**: MI x NI ``mma.sync`` per k step into the 4*MI*NI fp32 accumulators.
4. **epilogue**: C := alpha*acc + beta*C from the C fragment layout
   (c0, c1 = C[g, 2t:2t+2], c2, c3 = C[g+8, 2t:2t+2]), guarded at the edges.

BLAS semantics as :func:`microkernel.gpu.gemm`: beta == 0 never reads C (NaN in C
does not survive); alpha == 0 or K == 0 gives beta*C without reading A or B;
M == 0 or N == 0 touches nothing. Inputs: f16/bf16 (A, B as 16-bit words) or
float32 for tf32 (rounded in registers with ``cvt.rna.tf32.f32``); output fp32.

Under ``NUMBA_ENABLE_CUDASIM=1`` the very same kernel source runs with the
Python twins of the intrinsics (:func:`microkernel.gpu.mma_intrinsics.sim`).
"""
from __future__ import annotations

import threading

import numpy as np

from . import mma_intrinsics
from .kernel import _import_cuda
from .mma_tile import MmaTile
from .mma_source import signature, source

__all__ = ["MmaKernel", "kernel_for", "build", "source", "signature", "DEFAULT_MMA_TILES",
           "clear_cache"]

#: The default tile per precision: 64x64 warp tiles (128 fp32 accumulators per
#: lane: the port of avx512_8x16), 2x2 warps, XOR swizzle, 48 KB of static shared
#: memory in 3 stages, and the pipelined main loop with 2 fragment sets (ldmatrix of
#: k-step s+1 issued before the mma.sync of step s). Measured on the H200
#: (bench/results/h200/mma_candidates.md, 2026-12-01): f16 417.5 TFLOP/s = 54.8% of
#: cuBLAS at 4096^3 against 242.6 (31.9%) for the unpipelined loop; tf32 43.3%
#: against 25.0%. The 4-stage grouped-grid variant (421.3, 55.3%) ties with it and
#: needs a dynamic shared-memory opt-in, so the static one is the default.
DEFAULT_MMA_TILES = {
    "f16": MmaTile("f16", 64, 64, 2, 2, 32, 3, "swizzle", "pipelined", 2),
    "bf16": MmaTile("bf16", 64, 64, 2, 2, 32, 3, "swizzle", "pipelined", 2),
    "tf32": MmaTile("tf32", 64, 64, 2, 2, 16, 3, "swizzle", "pipelined", 2),
}



def build(tile: MmaTile, sim: bool):
    """The Python kernel function for ``tile`` (not yet ``cuda.jit``-ed): the
    source of :func:`source`, executed with the tile's constants and the
    intrinsics (GPU) or their Python twins (simulator) as its globals.

    The k steps, fragments and the epilogue are unrolled in the source (the
    accumulators are 4*MI*NI scalar variables): NVVM's unroller did not unroll
    the guarded epilogue of a 64x64 warp tile, which left the accumulator array
    in local memory (512 B stack frame, ld/st.local around every mma)."""
    cuda = _import_cuda()
    I = mma_intrinsics.sim() if sim else mma_intrinsics.gpu()
    u = np.uint32
    al, bl = tile.a_layout, tile.b_layout
    env = {
        "cuda": cuda, "uint32": cuda.uint32, "uint64": cuda.uint64, "float32": cuda.float32,
        "u": u, "min": min,
        "mma": I.mma[tile.precision], "ldsm": I.ldsm_x4, "ldsm_t": I.ldsm_x4_trans,
        "cp16": I.cp_async16, "commit": I.cp_commit, "wait": I.cp_wait(tile.stages - 2),
        "cvt": I.cvt_tf32, "lds32": I.lds32,
        "S": u(tile.stages), "S1": u(tile.stages - 1), "BK": u(tile.bk), "BM": u(tile.bm),
        "BN": u(tile.bn), "WM": u(tile.wm), "WN": u(tile.wn), "NT": u(tile.threads),
        "WARPS_N": u(tile.warps_n), "ES": u(tile.esize), "CE": u(16 // tile.esize),
        "A_STRIDE": u(al.stride), "A_SH": u(al.shift), "A_MUL": u(al.mul), "A_MASK": u(al.mask),
        "B_STRIDE": u(bl.stride), "B_SH": u(bl.shift), "B_MUL": u(bl.mul), "B_MASK": u(bl.mask),
        "STAGE": u(tile.stage_bytes), "B_BASE": u(-(-al.bytes // 128) * 128),
        "A_CPR": u(tile.bk * tile.esize // 16), "B_CPR": u(tile.bn * tile.esize // 16),
        "A_PER": u(tile.a_per), "B_PER": u(tile.b_per),
        "A_CHUNKS": u(tile.a_chunks), "B_CHUNKS": u(tile.b_chunks),
        "WORDS": tile.smem_bytes // 4, "ZERO": u(0), "ONE": u(1), "TWO": u(2),
        "SIXTEEN": u(16), "ALIGN": None if sim else 128,
        "SBYTES": u(tile.smem_bytes), "GROUP": u(tile.group_m),
    }
    src = source(tile)
    exec(compile(src, f"<microkernel.gpu.mma_kernel {tile.name}>", "exec"), env)
    fn = env[tile.name]
    fn.__source__ = src
    return fn


class MmaKernel:
    """One generated tensor-core kernel: its :class:`MmaTile`, numba dispatcher,
    launcher and resources. ``launch`` takes device arrays already in the kernel's
    form (see :func:`signature`); :func:`microkernel.gpu.mma_gemm` is the checked
    front end."""

    def __init__(self, tile: MmaTile, sim: bool):
        cuda = _import_cuda()
        self.tile = tile
        self.simulated = sim
        self.py_func = build(tile, sim)
        self.dispatcher = cuda.jit(self.py_func)

    def __repr__(self) -> str:
        return f"<MmaKernel {self.tile.name}{' (simulator)' if self.simulated else ''}>"

    @property
    def name(self) -> str:
        return self.tile.name

    def launch(self, A, B, C, k: int, alpha: float = 1.0, beta: float = 0.0, stream=0):
        """C (M x N) := alpha * A[:, :k] @ B[:k] + beta * C on device arrays (no checks)."""
        m, n = C.shape
        if m == 0 or n == 0:
            return C
        args = (A, B, C, np.uint32(k), np.float32(alpha), np.float32(beta))
        grid, nt = self.tile.grid(m, n), self.tile.threads
        if not self.tile.dynamic_smem:
            self.dispatcher[grid, nt, stream](*args)
            return C
        nbytes = self.tile.smem_bytes
        if not self.simulated:
            self.compile()
            self._allow_dynamic_smem()
        try:
            self.dispatcher[grid, nt, stream, nbytes](*args)
        except Exception:
            # a specialisation compiled at this call (other argument types) has
            # not had its attribute raised yet: raise it and launch once more
            if self.simulated or not self._allow_dynamic_smem():
                raise
            self.dispatcher[grid, nt, stream, nbytes](*args)
        return C

    def _allow_dynamic_smem(self) -> int:
        """Raise CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES to the tile's
        shared memory on every compiled specialisation not yet raised (numba-cuda
        has no API for it: the driver call of its own
        ``set_shared_memory_carveout`` on the kernel handle). Returns how many
        were raised now."""
        from numba.cuda.cudadrv.driver import binding, driver
        done = self.__dict__.setdefault("_dyn_done", set())
        attr = binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        n = 0
        for kern in list(self.dispatcher.overloads.values()):
            cufunc = kern.library.get_cufunc()
            key = (id(cufunc), cufunc.device.id)
            if key in done:
                continue
            driver.cuKernelSetAttribute(attr, int(self.tile.smem_bytes), cufunc.handle,
                                        cufunc.device.id)
            done.add(key)
            n += 1
        return n

    __call__ = launch

    def compile(self):
        """Compile for :func:`signature` on the current GPU (no-op in the simulator)."""
        if not self.simulated:
            self.dispatcher.compile(signature(self.tile))
        return self

    def resources(self) -> dict | None:
        """regs, local_bytes (spills), shared_bytes (static + dynamic),
        dynamic_shared_bytes, max_threads from numba's dispatcher on the current
        GPU; None in the simulator."""
        if self.simulated:
            return None
        from numba.cuda.core import sigutils
        self.compile()
        args, _ = sigutils.normalize_signature(signature(self.tile))
        d = self.dispatcher

        def pick(v):
            return int(v[tuple(args)] if isinstance(v, dict) else v)
        dyn = self.tile.smem_bytes if self.tile.dynamic_smem else 0
        return {"regs": pick(d.get_regs_per_thread()),
                "local_bytes": pick(d.get_local_mem_per_thread()),
                "shared_bytes": pick(d.get_shared_mem_per_block()) + dyn,
                "dynamic_shared_bytes": dyn,
                "max_threads": pick(d.get_max_threads_per_block())}

    def ptx(self, cc=(9, 0)) -> str:
        """PTX for compute capability ``cc`` (NVVM and NVRTC, no GPU needed)."""
        cuda = _import_cuda()
        if self.simulated:
            raise RuntimeError("no PTX under the CUDA simulator")
        ptx, _ = cuda.compile_ptx(self.py_func, signature(self.tile), cc=cc)
        return ptx

    def ptxas(self, arch: str = "sm_90") -> dict | None:
        """ptxas -v on :meth:`ptx`: regs, stack frame, spills, smem (offline; None
        without ptxas or NVVM). See :func:`microkernel.gpu.port.ptxas_resources`."""
        from .port import ptxas_resources
        return ptxas_resources(self, arch)


_CACHE: dict = {}
_LOCK = threading.Lock()


def clear_cache() -> None:
    with _LOCK:
        _CACHE.clear()


def kernel_for(tile: MmaTile) -> MmaKernel:
    """The cached :class:`MmaKernel` of ``tile`` (per simulator mode)."""
    from .kernel import simulator_active
    if not isinstance(tile, MmaTile):
        raise TypeError(f"tile must be an MmaTile, got {type(tile).__name__}")
    sim = simulator_active()
    with _LOCK:
        k = _CACHE.get((tile, sim))
        if k is None:
            k = _CACHE[(tile, sim)] = MmaKernel(tile, sim)
    return k
