"""Shared-memory bank conflicts, counted from the addresses of one warp request.

The model (CUDA C++ Programming Guide, "Compute Capabilities", section "Shared
Memory" for compute capability 5.x and later, which 9.0 follows; and NVIDIA's
Nsight Compute "wavefront" terminology):

- shared memory is 32 banks of 4 bytes: byte address ``a`` lies in bank
  ``(a // 4) % 32``;
- a warp request is served in *phases*: 32-bit (and narrower) accesses in one
  phase of 32 lanes, 64-bit accesses in two half-warp phases (lanes 0-15, 16-31),
  128-bit accesses (``ld.shared.v4``, ``cp.async`` 16-byte stores) in four
  quarter-warp phases of 8 lanes;
- ``ldmatrix.sync.aligned.m8n8.xN``: each 8x8 matrix is one phase, its 8 row
  addresses supplied by lanes 8i..8i+7, each row 16 contiguous bytes;
- within a phase, lanes touching the same 4-byte word share it (broadcast);
  distinct words in the same bank are serialised: the phase takes as many
  *wavefronts* as the largest number of distinct words falling in one bank.

``wavefronts`` of a request = the sum over its phases; ``ideal`` = what the same
bytes would take without conflicts (``ceil(distinct words / 32)`` per phase, at
least 1); ``conflicts = wavefronts - ideal`` (the quantity Nsight Compute's
``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum`` adds up over all
requests, for loads).

Pure Python; nothing here needs a GPU.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

__all__ = ["BANKS", "BANK_BYTES", "Request", "RequestCost", "wavefronts", "cost",
           "phases"]

BANKS = 32
BANK_BYTES = 4

#: Access kinds: bytes per lane and lanes per phase.
KINDS = {
    "ld32": (4, 32), "st32": (4, 32),
    "ld64": (8, 16), "st64": (8, 16),
    "ld128": (16, 8), "st128": (16, 8),
    "cp.async16": (16, 8),
    "ldmatrix.x1": (16, 8), "ldmatrix.x2": (16, 8), "ldmatrix.x4": (16, 8),
}
#: Lanes whose addresses an ldmatrix.xN reads (the others are ignored).
_LDSM_LANES = {"ldmatrix.x1": 8, "ldmatrix.x2": 16, "ldmatrix.x4": 32}


def phases(kind: str, addresses: Sequence[int | None]) -> list[list[int]]:
    """Split one warp request into its phases: lists of the byte addresses the
    active lanes access (inactive lanes: None). Raises ValueError for an unknown
    kind or not 32 addresses."""
    if kind not in KINDS:
        raise ValueError(f"unknown access kind {kind!r}; one of {sorted(KINDS)}")
    if len(addresses) != 32:
        raise ValueError(f"a warp request has 32 lane addresses, got {len(addresses)}")
    _, per = KINDS[kind]
    n = _LDSM_LANES.get(kind, 32)
    return [[a for a in addresses[p:p + per] if a is not None] for p in range(0, n, per)]


def _phase_cost(addrs: list[int], width: int) -> tuple[int, int]:
    words = set()
    for a in addrs:
        if a % min(width, 16):
            raise ValueError(f"address {a} is not {width}-byte aligned")
        words.update(range(a // BANK_BYTES, (a + width - 1) // BANK_BYTES + 1))
    if not words:
        return 0, 0
    per_bank: dict[int, int] = {}
    for w in words:
        per_bank[w % BANKS] = per_bank.get(w % BANKS, 0) + 1
    return max(per_bank.values()), max(1, -(-len(words) // BANKS))


def wavefronts(kind: str, addresses: Sequence[int | None]) -> int:
    """Wavefronts one warp request of ``kind`` needs, from its 32 lane byte
    addresses (see the module docstring).

    >>> wavefronts("ld32", [4 * i for i in range(32)])          # consecutive words
    1
    >>> wavefronts("ld32", [128 * i for i in range(32)])        # stride 32 words
    32
    """
    if kind not in KINDS:
        raise ValueError(f"unknown access kind {kind!r}; one of {sorted(KINDS)}")
    width = KINDS[kind][0]
    return sum(_phase_cost(p, width)[0] for p in phases(kind, addresses))


@dataclasses.dataclass(frozen=True)
class Request:
    """One shared-memory instruction of a kernel, as one warp issues it.

    ``addresses``: the 32 lane byte offsets (None for a lane that does not take
    part); ``count``: how many such requests one warp issues per unit of work
    (per k block in :mod:`microkernel.gpu.mma_tile`)."""
    name: str
    kind: str
    addresses: tuple
    count: int = 1


@dataclasses.dataclass(frozen=True)
class RequestCost:
    name: str
    kind: str
    count: int
    wavefronts: int
    ideal: int

    @property
    def conflicts(self) -> int:
        """Extra wavefronts per request (0 = conflict-free)."""
        return self.wavefronts - self.ideal

    @property
    def ways(self) -> float:
        """wavefronts / ideal (1.0 = conflict-free; 4.0: a 4-way conflict)."""
        return self.wavefronts / self.ideal if self.ideal else 0.0

    def as_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "count": self.count,
                "wavefronts": self.wavefronts, "ideal": self.ideal,
                "conflicts": self.conflicts, "ways": round(self.ways, 3)}


def cost(req: Request) -> RequestCost:
    """Wavefronts and the conflict-free ideal of one :class:`Request`."""
    width, _ = KINDS[req.kind]
    wf = ideal = 0
    for p in phases(req.kind, req.addresses):
        w, i = _phase_cost(p, width)
        wf += w
        ideal += i
    return RequestCost(req.name, req.kind, req.count, wf, ideal)
