"""sm_90 (Hopper: H100, H200) resource and occupancy model, in pure Python.

This is the arithmetic of NVIDIA's ``cuda_occupancy.h`` (the header behind the
CUDA Occupancy Calculator and ``cudaOccupancyMaxActiveBlocksPerMultiprocessor``)
with the sm_90 constants filled in, so that ``microkernel port`` can say *before
running anything* how many blocks and warps of a kernel fit on one SM and which
resource stops the next block:

- registers: 65536 per SM, split over 4 sub-partitions (warp schedulers); a warp
  is given ``roundup(regs_per_thread * 32, 256)`` registers; at most 255 registers
  per thread and 65536 per block. Warps from registers =
  ``4 * floor(16384 / regs_per_warp)``; blocks = that // warps per block.
- warps: 64 resident warps (2048 threads) per SM.
- blocks: 32 resident blocks per SM.
- shared memory: 228 KB per SM (the largest carve-out, which the driver picks when
  a kernel needs it), 227 KB per block at most (opt-in above 48 KB; statically
  declared shared memory, which is all numba's ``cuda.shared.array`` makes, is
  limited to 48 KB), 1 KB reserved by the system per resident block, allocated in
  128-byte units.

Sources: CUDA Toolkit ``include/cuda_occupancy.h`` (cudaOccMaxBlocksPerSMRegsLimit,
cudaOccMaxBlocksPerSMSmemLimit, cudaOccMaxBlocksPerSMWarpsLimit); CUDA C++
Programming Guide, "Compute Capabilities", table "Technical Specifications per
Compute Capability" (9.0 column).

No GPU and no numba are needed to import or use this module.
"""
from __future__ import annotations

import dataclasses
import math

__all__ = ["SmLimits", "SM90", "Occupancy", "occupancy", "regs_per_warp",
           "STATIC_SHARED_LIMIT", "waves", "busiest_sm_rounds"]

#: Bytes of *statically* declared shared memory a block may use (``__shared__`` /
#: ``cuda.shared.array``); more needs dynamic shared memory and an opt-in.
STATIC_SHARED_LIMIT = 48 * 1024


@dataclasses.dataclass(frozen=True)
class SmLimits:
    """Per-SM limits of one compute capability (the fields cuda_occupancy.h reads
    from cudaDeviceProp plus its per-architecture tables). Sizes in bytes."""
    name: str
    warp_size: int = 32
    regs_per_sm: int = 64 * 1024
    reg_alloc_unit: int = 256          # registers, allocated per warp
    max_regs_per_thread: int = 255
    max_regs_per_block: int = 64 * 1024
    sub_partitions: int = 4
    max_warps_per_sm: int = 64
    max_blocks_per_sm: int = 32
    max_threads_per_block: int = 1024
    smem_per_sm: int = 228 * 1024
    smem_per_block_optin: int = 227 * 1024
    smem_reserved_per_block: int = 1024
    smem_alloc_unit: int = 128
    sm_count: int | None = None       # 132 on H100 SXM / H200 (device property)


#: NVIDIA Hopper, compute capability 9.0 (H100, H200: 132 SMs on the SXM parts).
SM90 = SmLimits(name="sm_90", sm_count=132)


def _roundup(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def regs_per_warp(regs_per_thread: int, limits: SmLimits = SM90) -> int:
    """Registers one warp is given: ``roundup(regs * 32, 256)`` (cuda_occupancy.h,
    allocation granularity "warp")."""
    return _roundup(regs_per_thread * limits.warp_size, limits.reg_alloc_unit)


@dataclasses.dataclass(frozen=True)
class Occupancy:
    """Resident blocks and warps of one kernel configuration on one SM.

    ``limits`` maps each resource (``registers``, ``warps``, ``blocks``,
    ``shared``) to the number of blocks that resource alone allows; ``limiter``
    names the smallest (ties listed in that order). ``blocks_per_sm == 0`` means
    the configuration cannot launch (``error`` says why).
    """
    regs_per_thread: int
    threads_per_block: int
    smem_per_block: int
    blocks_per_sm: int
    warps_per_block: int
    limiter: str
    limits: dict
    max_warps_per_sm: int
    error: str | None = None

    @property
    def warps_per_sm(self) -> int:
        return self.blocks_per_sm * self.warps_per_block

    @property
    def fraction(self) -> float:
        """Resident warps / the SM's 64-warp maximum (the "occupancy")."""
        return self.warps_per_sm / self.max_warps_per_sm

    def as_dict(self) -> dict:
        return {
            "regs_per_thread": self.regs_per_thread,
            "threads_per_block": self.threads_per_block,
            "smem_per_block": self.smem_per_block,
            "blocks_per_sm": self.blocks_per_sm,
            "warps_per_sm": self.warps_per_sm,
            "occupancy": round(self.fraction, 4),
            "limiter": self.limiter,
            "limits": dict(self.limits),
            "error": self.error,
        }

    def __str__(self) -> str:
        if self.error:
            return f"cannot launch: {self.error}"
        return (f"{self.blocks_per_sm} blocks x {self.warps_per_block} warps = "
                f"{self.warps_per_sm}/{self.max_warps_per_sm} warps per SM "
                f"({self.fraction:.0%}), limited by {self.limiter}")


def occupancy(regs_per_thread: int, threads_per_block: int, smem_per_block: int = 0,
              limits: SmLimits = SM90, *, static_smem: bool = True) -> Occupancy:
    """Blocks and warps per SM for a kernel using ``regs_per_thread`` registers,
    ``threads_per_block`` threads and ``smem_per_block`` bytes of shared memory.

    Parameters
    ----------
    regs_per_thread : int
        Registers per thread (from ptxas / ``get_regs_per_thread()``, or an
        estimate), 1..255.
    threads_per_block : int
        1..1024.
    smem_per_block : int
        Shared memory per block in bytes (static + dynamic), without the 1 KB the
        system reserves (added here).
    static_smem : bool
        True when all of it is static (``cuda.shared.array``): then 48 KB is the
        per-block ceiling instead of 227 KB.

    Returns
    -------
    Occupancy
        ``blocks_per_sm == 0`` and ``error`` set when the kernel cannot launch
        (too many registers or threads, too much shared memory).

    Raises
    ------
    ValueError
        Non-positive registers or threads, negative shared memory.

    Example: 210 registers x 256 threads -> regs_per_warp 6912, 2 warps per
    sub-partition, 8 warps per SM from registers: 1 block, 8 warps (12.5%).
    """
    if regs_per_thread < 1 or threads_per_block < 1 or smem_per_block < 0:
        raise ValueError(f"occupancy needs regs >= 1, threads >= 1, smem >= 0; got "
                         f"{regs_per_thread}, {threads_per_block}, {smem_per_block}")
    lim = limits
    warps_per_block = -(-threads_per_block // lim.warp_size)
    error = None
    smem_cap = STATIC_SHARED_LIMIT if static_smem else lim.smem_per_block_optin
    rpw = regs_per_warp(regs_per_thread, lim)
    if regs_per_thread > lim.max_regs_per_thread:
        error = f"{regs_per_thread} registers per thread > {lim.max_regs_per_thread}"
    elif threads_per_block > lim.max_threads_per_block:
        error = f"{threads_per_block} threads per block > {lim.max_threads_per_block}"
    elif rpw * warps_per_block > lim.max_regs_per_block:
        error = (f"{rpw * warps_per_block} registers per block > "
                 f"{lim.max_regs_per_block}")
    elif smem_per_block > smem_cap:
        error = (f"{smem_per_block} bytes of {'static ' if static_smem else ''}shared "
                 f"memory per block > {smem_cap}")
    # registers: whole warps per sub-partition (cudaOccMaxBlocksPerSMRegsLimit)
    warps_per_sub = (lim.regs_per_sm // lim.sub_partitions) // rpw
    by_regs = (warps_per_sub * lim.sub_partitions) // warps_per_block
    by_warps = lim.max_warps_per_sm // warps_per_block
    by_blocks = lim.max_blocks_per_sm
    smem_alloc = _roundup(smem_per_block + lim.smem_reserved_per_block, lim.smem_alloc_unit)
    by_smem = lim.smem_per_sm // smem_alloc if smem_alloc else by_blocks
    table = {"registers": by_regs, "warps": by_warps, "blocks": by_blocks,
             "shared": by_smem}
    blocks = 0 if error else min(table.values())
    limiter = min(table, key=lambda k: table[k]) if not error else "launch limit"
    if not error and blocks == 0:
        error = "no block fits on one SM"
    return Occupancy(regs_per_thread, threads_per_block, smem_per_block, blocks,
                     warps_per_block, limiter, table, lim.max_warps_per_sm, error)


def waves(blocks: int, blocks_per_sm: int, limits: SmLimits = SM90) -> float:
    """Grid size in "waves": blocks / (blocks_per_sm * SM count); a fractional last
    wave leaves SMs idle (tail effect)."""
    if not blocks_per_sm or not limits.sm_count:
        return math.inf
    return blocks / (blocks_per_sm * limits.sm_count)


def busiest_sm_rounds(blocks: int, blocks_per_sm: int, limits: SmLimits = SM90) -> list[int]:
    """How the busiest SM works through a grid: the number of blocks it runs at
    once in each of its successive rounds.

    The block scheduler hands the ``blocks`` out evenly over the SMs, so the
    busiest SM gets ``L = ceil(blocks / sm_count)`` of them and runs them
    ``blocks_per_sm`` at a time: ``ceil(L / blocks_per_sm)`` rounds, all full but
    possibly the last (the tail of the last wave). Example: 1024 blocks, 2 per SM,
    132 SMs: L = 8, rounds [2, 2, 2, 2]; 6 blocks: [1] (126 SMs idle).

    Raises ValueError for a negative block count or ``blocks_per_sm`` < 1, and
    when ``limits`` has no SM count.
    """
    if blocks < 0 or blocks_per_sm < 1:
        raise ValueError(f"need blocks >= 0 and blocks_per_sm >= 1, got {blocks}, "
                         f"{blocks_per_sm}")
    if not limits.sm_count:
        raise ValueError(f"{limits.name} has no sm_count")
    per_sm = -(-blocks // limits.sm_count)
    full, rest = divmod(per_sm, blocks_per_sm)
    return [blocks_per_sm] * full + ([rest] if rest else [])
