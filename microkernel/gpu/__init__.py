"""microkernel.gpu: the numba CUDA companion module (optional extra ``[gpu]``).

The validated CPU register tile, ported to a numba ``cuda.jit`` SGEMM in which
every thread runs the CPU micro-kernel's loop on a TM x TN register tile:

- :mod:`microkernel.gpu.kernel`: the kernel factory (:func:`make_sgemm`,
  :func:`from_spec`, :class:`GpuTile`) and the checked front end :func:`gemm`.
- :mod:`microkernel.gpu.port`: CPU tile -> GPU thread tile, block tile and thread
  count (:func:`plan`), the resource/occupancy report (:func:`port`), validation,
  and the ``microkernel port`` CLI functions.
- :mod:`microkernel.gpu.occupancy`: the sm_90 occupancy model (cuda_occupancy.h).

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

Only :mod:`microkernel.tile` is imported from the rest of the package (no cffi);
numba-cuda is imported on first use, so ``port``'s estimates work without it.
"""
from . import kernel, occupancy, port
from .occupancy import SM90, Occupancy
from .kernel import (DEFAULT_TILE, GpuTile, SgemmKernel, gemm, make_sgemm, from_spec,
                     simulator_active)
from .port import PortPlan, plan, validate, add_port_arguments, run_port
from . import banks, fragments, mma_tile, mma_port
from .mma_tile import MmaTile
from .mma_gemm import mma_gemm

# The submodules ``port`` and ``occupancy`` keep their names here (their main
# functions are ``port.port(name)`` and ``occupancy.occupancy(regs, threads, smem)``);
# ``port_report`` is the package-level name of the former.
port_report = port.port

__all__ = ["kernel", "occupancy", "port", "SM90", "Occupancy", "DEFAULT_TILE", "GpuTile",
           "SgemmKernel", "gemm", "make_sgemm", "from_spec", "simulator_active",
           "PortPlan", "plan", "port_report", "validate", "add_port_arguments",
           "run_port", "banks", "fragments", "mma_tile", "mma_port", "MmaTile", "mma_gemm"]
