"""microkernel.gpu: the numba CUDA companion module (optional extra ``[gpu]``).

The validated CPU register tile, ported to a numba ``cuda.jit`` SGEMM in which
every thread runs the CPU micro-kernel's loop on a TM x TN register tile:

- :mod:`microkernel.gpu.tiles`: :class:`GpuTile` (thread, warp and block tile).
- :mod:`microkernel.gpu.kernel`: the kernel factory (:func:`make_sgemm`,
  :func:`from_spec`, :func:`kernel_for`): the original kernel (no warp tile) and
- :mod:`microkernel.gpu.simt`: the warp-tiled kernel generator (float4 global
  loads, A transposed and skewed in shared memory, double buffering, split-K),
  with :mod:`microkernel.gpu.intrinsics` (16-byte global loads and stores) and
  :mod:`microkernel.gpu.simt_banks` (its shared accesses, priced by the bank model).
- :mod:`microkernel.gpu.launch`: the shape-adaptive launch (tile and split-K per
  shape, waves model), the plan cache and the fast launch path.
- :mod:`microkernel.gpu.front`: the checked front end :func:`gemm`.
- :mod:`microkernel.gpu.port`: CPU tile -> GPU thread tile, warp tile, block tile
  (:func:`plan`), the resource/occupancy report (:func:`port`), validation, and
  the ``microkernel port`` CLI functions.
- :mod:`microkernel.gpu.occupancy`: the sm_90 occupancy and waves model.
- :mod:`microkernel.gpu.sweep`: ``microkernel sweep --gpu`` (ranks GPU tiles).

The tensor-core path (``mma.sync``; docs/gpu-tensor-cores.md):

- :mod:`microkernel.gpu.fragments`: mma fragment layouts as data, the numpy
  warp-level mma model, lane maps (text, PNG).
- :mod:`microkernel.gpu.banks`: the shared-memory bank-conflict model.
- :mod:`microkernel.gpu.mma_tile`: :class:`MmaTile`, shared-memory layouts (pad,
  XOR swizzle), the lane addresses of every shared load/store.
- :mod:`microkernel.gpu.mma_intrinsics`, :mod:`microkernel.gpu.mma_kernel`: the
  mma.sync / ldmatrix / cp.async intrinsics and the generated kernel;
  :func:`mma_gemm` (:mod:`microkernel.gpu.mma_gemm`) its checked front end;
  :mod:`microkernel.gpu.mma_probe` the one-warp placement probes.
- :mod:`microkernel.gpu.mma_port`: ``microkernel port NAME --mma P``.

Only :mod:`microkernel.tile` and the pure-Python :mod:`microkernel.stats` /
:mod:`microkernel.timing` are imported from the rest of the package (no cffi);
numba-cuda is imported on first use, so ``port``'s estimates work without it.
"""
from . import kernel, occupancy, port, tiles, launch, front
from .occupancy import SM90, Occupancy
from .tiles import DEFAULT_TILE, LEGACY_TILE, GpuTile
from .kernel import SgemmKernel, make_sgemm, from_spec, kernel_for, simulator_active
from .front import gemm
from .launch import AUTO_TILES, LaunchPlan, plan_launch
from .port import PortPlan, plan, validate
from . import banks, simt_banks, fragments, mma_tile, mma_port
from .mma_tile import MmaTile
from .mma_gemm import mma_gemm

# The submodules ``port`` and ``occupancy`` keep their names here (their main
# functions are ``port.port(name)`` and ``occupancy.occupancy(regs, threads, smem)``);
# ``port_report`` is the package-level name of the former.
port_report = port.port

__all__ = ["kernel", "occupancy", "port", "tiles", "launch", "front", "SM90", "Occupancy",
           "DEFAULT_TILE", "LEGACY_TILE", "GpuTile", "SgemmKernel", "gemm", "make_sgemm",
           "from_spec", "kernel_for", "simulator_active", "AUTO_TILES", "LaunchPlan",
           "plan_launch", "PortPlan", "plan", "port_report", "validate", "banks", "simt_banks", "fragments", "mma_tile",
           "mma_port", "MmaTile", "mma_gemm"]
