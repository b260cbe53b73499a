"""Occupancy per target: registers and shared memory -> resident warps/waves, limiter.

One function, :func:`occupancy_for`, dispatches on :attr:`Target.model
<microkernel.gpu.targets.Target>`; every model reads its numbers from the target
record (:mod:`microkernel.gpu.targets`, each limit with its source) and returns a
:class:`TargetOccupancy`. This is a model of documented limits, not a measurement.

``cuda`` (sm_80, sm_90) -- the cuda_occupancy.h arithmetic of
:func:`microkernel.gpu.occupancy.occupancy` with the target's limits:
``regs_per_warp = roundup(regs * 32, 256)``; warps from registers
``= 4 * floor((65536 / 4) / regs_per_warp)``; blocks = min(registers, 64 warps,
32 blocks, shared memory ``smem_per_sm // roundup(smem + 1 KB, 128)``).

``amd`` (cdna2, cdna3, rdna3) -- LLVM's AMDGPU rules (AMDGPUBaseInfo.cpp) and
ROCm's MI300X occupancy recipe (workload.rst "Compute the occupancy of a kernel"):

- VGPRs per lane: CDNA (unified file) ``v = alignTo(arch, 4) + acc`` when AccVGPRs
  are used, else ``arch``; RDNA3 ``v = arch``. Errors: arch > 256, acc > 256,
  v > 512 (CDNA).
- waves per SIMD from VGPRs ``w_v = min(vgprs_per_simd // roundup(v, granule),
  max_waves)`` (``max_waves`` when ``v < granule``): CDNA 512 / granule 8 / 8 waves;
  RDNA3 wave32 1536 / granule 24 / 16 waves.
- SGPRs (CDNA only, when given): LLVM getOccupancyWithNumSGPRs for gfx8/gfx9
  (<= 80: 10, <= 88: 9, <= 100: 8, else 7 waves); RDNA3: no limit.
- workgroups per CU (WGP) = min(VGPRs ``floor(w_v * simds / nW)``, wave slots
  ``floor(max_waves * simds / nW)``, LDS ``floor(lds_per_cu / roundup(L, granule))``,
  barriers ``max_groups_per_cu`` (multi-wave groups)), ``nW = ceil(threads / lanes)``;
  resident waves = groups * nW (ROCm: ``occ = min(floor(occ_vgpr * 4 / nW), occ_lds)
  * nW / 4`` waves per EU).

``mali`` (mali-valhall) -- Arm's threshold: up to 32 work registers per thread keep
the full thread capacity (1024 threads per Mali-G78 core), 33..64 halve it, more
than 64 spill (an error here). Workgroups using barriers or shared memory must be
resident whole (Best Practices 8.1): groups = capacity // threads.

``adreno`` (adreno-7xx) -- Mesa ir3's footprint model (a reverse-engineered driver;
Qualcomm's guide names the mechanism, not the numbers): registers in vec4 units
``r = ceil(regs / 4)``; waves from registers ``(reg_size_vec4 // (r * d)) * 2``
(``d`` = 2 for 128-fiber waves); from shared memory ``waves_per_wg * (32 KiB //
roundup(L, 1 KiB)) * 2`` with ``waves_per_wg = ceil(threads / (64 * d * 2))``;
at most 16 waves per SP.
"""
from __future__ import annotations

import dataclasses

from .occupancy import occupancy as cuda_occupancy
from .targets import Target, sm_limits

__all__ = ["TargetOccupancy", "occupancy_for", "amd_vgprs", "amd_vgpr_waves",
           "sgpr_waves_gfx9", "FORMULAS"]

FORMULAS = {
    "cuda": "cuda_occupancy.h: regs_per_warp = roundup(regs*32, 256); warps(regs) = "
            "4*floor(16384/regs_per_warp); blocks = min(regs, 64 warps, 32 blocks, "
            "smem_per_sm // roundup(smem + 1 KB, 128))",
    "amd": "LLVM AMDGPUBaseInfo: waves/SIMD(VGPR) = min(file // roundup(v, granule), "
           "max_waves), v = alignTo(arch, 4) + acc (CDNA); groups/CU = min(floor(w*SIMDs/"
           "nW), floor(max_waves*SIMDs/nW), LDS // roundup(L, 512), barriers) (ROCm MI300X "
           "recipe)",
    "mali": "Arm Valhall: <= 32 work registers: full thread capacity; 33..64: half; "
            "groups = capacity // threads (barrier/shared groups resident whole)",
    "adreno": "Mesa ir3: waves(regs) = (reg_size_vec4 // (ceil(regs/4)*d)) * 2; "
              "waves(shared) = ceil(T/(64*d*2)) * (32 KiB // roundup(L, 1 KiB)) * 2; "
              "<= 16 waves",
}


def _roundup(x: int, unit: int) -> int:
    return -(-x // unit) * unit


@dataclasses.dataclass
class TargetOccupancy:
    """Resident warps/waves of one configuration on one SM/CU/WGP/core/SP.

    ``limits`` maps each resource to what it alone allows, in ``limit_unit``
    (``blocks``/``workgroups`` per unit, or ``waves`` for adreno); ``limiter`` names
    the smallest (ties joined with " = "). ``waves`` is the resident warps/waves per
    ``unit``, ``max_waves`` the hardware maximum per unit. ``waves == 0`` with
    ``error`` set means the configuration cannot run (spills or exceeds a limit).
    ``regs`` is what was asked per lane, ``alloc_regs`` what is allocated."""
    target: str
    model: str
    unit: str
    lane_word: str
    lanes: int
    regs: int
    alloc_regs: int | None
    threads: int
    group_waves: int
    smem_bytes: int
    groups: int
    waves: int
    max_waves: int
    limiter: str
    limits: dict
    limit_unit: str
    error: str | None = None
    notes: list = dataclasses.field(default_factory=list)

    @property
    def fraction(self) -> float:
        return self.waves / self.max_waves if self.max_waves else 0.0

    def as_dict(self) -> dict:
        return {"target": self.target, "model": self.model, "unit": self.unit,
                "lane_word": self.lane_word, "lanes": self.lanes, "regs": self.regs,
                "alloc_regs": self.alloc_regs, "threads": self.threads,
                "group_waves": self.group_waves, "smem_bytes": self.smem_bytes,
                "groups": self.groups, "waves": self.waves, "max_waves": self.max_waves,
                "occupancy": round(self.fraction, 4), "limiter": self.limiter,
                "limits": dict(self.limits), "limit_unit": self.limit_unit,
                "formula": FORMULAS[self.model], "error": self.error,
                "notes": list(self.notes)}

    def __str__(self) -> str:
        if self.error:
            return f"cannot run: {self.error}"
        return (f"{self.waves}/{self.max_waves} {self.lane_word}s per {self.unit} "
                f"({self.fraction:.0%}), limited by {self.limiter}")


def _limiter(table: dict) -> str:
    low = min(table.values())
    return " = ".join(k for k, v in table.items() if v == low)


def occupancy_for(target: Target, regs: int, threads: int, smem: int = 0, *,
                  acc_regs: int = 0, sgprs: int | None = None,
                  wave128: bool = False) -> TargetOccupancy:
    """Resident warps/waves for ``regs`` registers per lane (CDNA: ArchVGPRs),
    ``acc_regs`` AccVGPRs per lane (CDNA only; elsewhere add them to ``regs``),
    ``threads`` per block/workgroup and ``smem`` bytes of shared memory/LDS per
    block. ``sgprs``: scalar registers per wave (CDNA; None: not counted).
    ``wave128``: Adreno 128-fiber waves (default 64).

    Raises ValueError for regs < 1, threads < 1, smem < 0, or acc_regs on a target
    without AccVGPRs. A configuration that cannot run is returned with ``error``
    set and ``waves == 0`` (not raised)."""
    if regs < 1 or threads < 1 or smem < 0 or acc_regs < 0:
        raise ValueError(f"occupancy needs regs >= 1, threads >= 1, smem >= 0, acc >= 0; got "
                         f"{regs}, {threads}, {smem}, {acc_regs}")
    if acc_regs and "max_acc_vgprs" not in target.limits:
        raise ValueError(f"{target.name} has no AccVGPRs: count them in regs")
    fn = {"cuda": _cuda, "amd": _amd, "mali": _mali, "adreno": _adreno}[target.model]
    return fn(target, regs, threads, smem, acc_regs=acc_regs, sgprs=sgprs, wave128=wave128)


def _base(t: Target, regs, alloc, threads, nW, smem, groups, waves, max_waves, table,
          unit_word, error=None, notes=None, lanes=None):
    limiter = "launch limit" if error else _limiter(table)
    return TargetOccupancy(t.name, t.model, t.unit, t.lane_word, lanes or t.lanes, regs,
                           alloc, threads, nW, smem, 0 if error else groups,
                           0 if error else waves, max_waves, limiter, table, unit_word,
                           error, notes or [])


# -- NVIDIA ------------------------------------------------------------------------------

def _cuda(t, regs, threads, smem, **_):
    occ = cuda_occupancy(regs, threads, smem, sm_limits(t), static_smem=False)
    alloc = _roundup(regs * t.lanes, t.value("reg_alloc_unit")) // t.lanes
    notes = ["shared memory above 48 KB per block needs dynamic allocation and an opt-in"] \
        if smem > t.value("static_smem_limit") else []
    return _base(t, regs, alloc, threads, occ.warps_per_block, smem, occ.blocks_per_sm,
                 occ.warps_per_sm, occ.max_warps_per_sm, dict(occ.limits), "blocks",
                 occ.error, notes)


# -- AMD ---------------------------------------------------------------------------------

def amd_vgprs(t: Target, arch: int, acc: int = 0) -> int:
    """VGPRs per lane a wave is charged before granularity: CDNA with AccVGPRs
    ``alignTo(arch, 4) + acc`` (LLVM D119912), else ``arch``."""
    if acc:
        return _roundup(arch, t.value("acc_offset_granule")) + acc
    return arch


def amd_vgpr_waves(t: Target, vgprs: int) -> int:
    """Waves per SIMD that ``vgprs`` per lane allow (LLVM
    getNumWavesPerEUWithNumVGPRs): ``min(max(file // roundup(v, g), 1), max_waves)``,
    ``max_waves`` when ``v < g``."""
    g, file, mx = t.value("vgpr_granule"), t.value("vgprs_per_simd"), t.value("max_waves_per_simd")
    if vgprs < g:
        return mx
    return min(max(file // _roundup(vgprs, g), 1), mx)


def sgpr_waves_gfx9(sgprs: int) -> int:
    """LLVM getOccupancyWithNumSGPRs for gfx8/gfx9 (VOLCANIC_ISLANDS and later,
    before GFX10): <= 80 SGPRs: 10 waves, <= 88: 9, <= 100: 8, else 7."""
    for bound, w in ((80, 10), (88, 9), (100, 8)):
        if sgprs <= bound:
            return w
    return 7


def _amd(t, regs, threads, smem, *, acc_regs=0, sgprs=None, **_):
    lanes, simds, mx = t.lanes, t.value("simds_per_cu"), t.value("max_waves_per_simd")
    nW = -(-threads // lanes)
    error = None
    notes = []
    cdna = "max_acc_vgprs" in t.limits
    v = amd_vgprs(t, regs, acc_regs)
    if regs > t.value("max_arch_vgprs"):
        error = f"{regs} VGPRs per lane > {t.value('max_arch_vgprs')} addressable (spills)"
    elif cdna and acc_regs > t.value("max_acc_vgprs"):
        error = f"{acc_regs} AccVGPRs per lane > {t.value('max_acc_vgprs')}"
    elif cdna and v > t.value("max_vgprs"):
        error = f"{v} unified VGPRs per lane > {t.value('max_vgprs')}"
    elif threads > t.value("max_group_threads"):
        error = f"{threads} work-items per workgroup > {t.value('max_group_threads')}"
    elif smem > t.value("lds_per_group"):
        error = f"{smem} bytes of LDS per workgroup > {t.value('lds_per_group')}"
    g = t.value("vgpr_granule")
    alloc = _roundup(v, g)
    w_v = amd_vgpr_waves(t, v)
    table = {"VGPRs": (w_v * simds) // nW, "wave slots": (mx * simds) // nW}
    if cdna and sgprs is not None:
        w_s = min(sgpr_waves_gfx9(sgprs), mx)
        table["SGPRs"] = (w_s * simds) // nW
    elif cdna:
        notes.append("SGPRs not counted (<= 100 SGPRs never limit CDNA's 8 waves)")
    if smem:
        gran = t.get("lds_granule", 1)
        table["LDS"] = t.value("lds_per_cu") // _roundup(smem, gran)
    if nW > 1:
        table["barriers"] = t.value("max_groups_per_cu")
    groups = min(table.values())
    if not error and groups == 0:
        error = "no workgroup fits on one " + t.unit
    return _base(t, v, alloc, threads, nW, smem, groups, groups * nW, mx * simds, table,
                 "workgroups", error, notes)


# -- Arm Mali ----------------------------------------------------------------------------

def _mali(t, regs, threads, smem, **_):
    cap_full = t.value("thread_capacity")
    full, mx = t.value("full_occupancy_regs"), t.value("max_regs_per_lane")
    lanes = t.lanes
    error = None
    if regs > mx:
        error = f"{regs} work registers > {mx} per thread (spills to memory)"
    halved = regs > full
    cap = cap_full // t.value("capacity_divisor_above_full") if halved else cap_full
    alloc = mx if halved else full
    groups = cap // threads
    notes = ["shared memory not modelled: no per-core capacity documented"] if smem else []
    if not error and groups == 0:
        error = f"{threads} threads per workgroup > {cap} resident at {regs} registers"
    nW = -(-threads // lanes)
    key = "registers (> 32: half thread capacity)" if halved else "thread capacity"
    return _base(t, regs, alloc, threads, nW, smem, groups, groups * nW, cap_full // lanes,
                 {key: groups}, "workgroups", error, notes)


# -- Qualcomm Adreno (Mesa ir3 model) ---------------------------------------------------

def _adreno(t, regs, threads, smem, *, wave128=False, **_):
    d = 2 if wave128 else 1
    lanes = t.value("lanes_double") if wave128 else t.value("lanes")
    gran, mx = t.value("wave_granularity"), t.value("max_waves")
    error = None
    if regs > t.value("max_regs_per_lane"):
        error = f"{regs} registers per fiber > {t.value('max_regs_per_lane')} (spills)"
    vec4 = -(-regs // 4)
    table = {"registers": (t.value("reg_file_vec4") // (vec4 * d)) * gran, "wave slots": mx}
    waves_per_wg = -(-threads // (t.value("lanes") * d * gran))
    if smem:
        shared = _roundup(smem, t.value("lds_granule"))
        if shared > t.value("lds_per_cu"):
            error = error or f"{smem} bytes of shared memory > {t.value('lds_per_cu')}"
        table["shared memory"] = waves_per_wg * (t.value("lds_per_cu") // shared) * gran
    waves = min(table.values())
    nW = -(-threads // lanes)
    if not error and waves < nW:
        error = f"a {threads}-fiber workgroup needs {nW} waves; only {waves} fit"
    return _base(t, regs, vec4 * 4, threads, nW, smem, waves // nW if nW else 0, waves, mx,
                 table, "waves", error, lanes=lanes)
