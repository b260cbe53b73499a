"""Block rasterization: which tile of C a block of the grid computes.

Shared by the tensor-core kernel (:mod:`microkernel.gpu.mma_source`) and the
warp-tiled SIMT kernel (:mod:`microkernel.gpu.simt`). Row-major: block (x, y) takes
block row y, block column x. Grouped (a tile's ``group_m`` > 1): the linear block id
walks ``GROUP`` block rows down a column of blocks before it moves one column right,
so the blocks resident at the same time read fewer distinct slices of A and B and
more of them hit in L2 (Triton's matmul tutorial, section "L2 Cache Optimizations").
The map is a bijection of the grid: every tile once, whatever the grid's shape.

Each value is kernel source (4-space indented, numba CUDA Python) defining ``bm_i``
and ``bn_i``, the block's tile row and column; the grouped one needs a ``uint32``
constant ``GROUP`` in the kernel's globals.
"""
from __future__ import annotations

__all__ = ["BLOCK_INDEX"]

BLOCK_INDEX = {
    False: """    bm_i = uint32(cuda.blockIdx.y)
    bn_i = uint32(cuda.blockIdx.x)""",
    True: """    gx = uint32(cuda.gridDim.x)
    pid = uint32(uint32(cuda.blockIdx.y) * gx + uint32(cuda.blockIdx.x))
    per = uint32(GROUP * gx)
    first = uint32((pid // per) * GROUP)
    size = uint32(min(uint32(cuda.gridDim.y) - first, GROUP))
    rem = uint32(pid % per)
    bm_i = uint32(first + rem % size)
    bn_i = uint32(rem // size)""",
}
