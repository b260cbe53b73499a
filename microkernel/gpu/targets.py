"""GPU targets as data: one record per architecture, every limit with its source.

The port report (:mod:`microkernel.gpu.port_targets`) asks the same question of every
GPU: *how many accumulators can one lane hold, and what does that do to how many
warps or waves stay resident?* The answer depends on a handful of documented
limits per architecture. This module writes them down, one :class:`Target` per
architecture, each value a :class:`Limit` that carries the document and section it
comes from (:mod:`microkernel.gpu.sources`). A limit the documents read do not give
is kept as ``value=None`` with ``why_missing`` saying so, and no model uses it.

Targets (``TARGETS``, in this order; lanes per warp/wave; what "resident per" counts):

- ``sm_80``: NVIDIA Ampere A100 (compute capability 8.0); 32; SM
- ``sm_90``: NVIDIA Hopper H100/H200 (cc 9.0); 32; SM
- ``cdna2``: AMD CDNA2, gfx90a (MI210, MI250, MI250X); 64; CU of 4 SIMDs
- ``cdna3``: AMD CDNA3, gfx942 (MI300X, MI300A, MI325X); 64; CU of 4 SIMDs
- ``rdna3``: AMD RDNA3, gfx1100/gfx1101 (RX 7900, W7900), wave32; 32; WGP of 4 SIMDs
- ``mali-valhall``: Arm Mali-G78 shader core (Valhall gen 2); 16; shader core
- ``adreno-7xx``: Qualcomm Adreno 7xx as Mesa's ir3 models it; 64 (or 128); SP

This is a model of documented limits, not a measurement: none of these GPUs is
needed (or used) to build it. Units: registers are 32-bit registers *per lane*
unless a key says ``per_sm``; sizes are bytes.

``sm_limits(TARGETS["sm_90"])`` equals :data:`microkernel.gpu.occupancy.SM90`
(except the SM count, a device property no document here gives); the tests check it.
"""
from __future__ import annotations

import dataclasses

from .occupancy import SmLimits
from .sources import SOURCES, cite

__all__ = ["Limit", "Target", "TARGETS", "TARGET_NAMES", "get_target", "sm_limits",
           "UnknownTarget"]

KB = 1024


@dataclasses.dataclass(frozen=True)
class Limit:
    """One documented limit: ``value`` in ``unit``, from ``source`` (a key of
    :data:`~microkernel.gpu.sources.SOURCES`) at ``section``. ``value is None``
    means the documents read do not give it (``why_missing`` says why)."""
    value: object
    unit: str
    source: str | None
    section: str = ""
    why_missing: str = ""

    def __post_init__(self):
        if self.value is not None and self.source not in SOURCES:
            raise ValueError(f"limit {self.value!r} {self.unit}: unknown source "
                             f"{self.source!r} (a limit without a source is not allowed)")
        if self.value is None and not self.why_missing:
            raise ValueError("a missing limit needs why_missing")

    def as_dict(self) -> dict:
        d = {"value": self.value, "unit": self.unit}
        if self.value is None:
            d["why_missing"] = self.why_missing
        else:
            src = SOURCES[self.source]
            d["source"] = cite(self.source, self.section)
            d["source_key"] = self.source
            d["source_kind"] = src.kind
            d["where"] = src.where
        return d


def L(value, unit, source, section="") -> Limit:
    return Limit(value, unit, source, section)


def missing(unit, why) -> Limit:
    return Limit(None, unit, None, "", why)


@dataclasses.dataclass(frozen=True)
class Target:
    """One architecture. ``model`` selects the occupancy model in
    :mod:`microkernel.gpu.occupancy_models` (``cuda``, ``amd``, ``mali``,
    ``adreno``); ``unit`` is what "resident per ..." counts (SM, CU, WGP, shader
    core, SP); ``lane_word`` is ``warp`` or ``wave``; ``matrix`` is the
    :mod:`microkernel.gpu.fragments_amd` architecture key of its matrix
    instructions (``None``: none documented)."""
    name: str
    description: str
    vendor: str
    model: str
    unit: str
    lane_word: str
    limits: dict
    matrix: str | None = None
    notes: tuple = ()

    def value(self, key: str):
        """The value of limit ``key``. KeyError if the record has no such key;
        ValueError if the documents do not give it (``None``)."""
        lim = self.limits[key]
        if lim.value is None:
            raise ValueError(f"{self.name}: {key} is not documented ({lim.why_missing})")
        return lim.value

    def get(self, key: str, default=None):
        lim = self.limits.get(key)
        return default if lim is None or lim.value is None else lim.value

    @property
    def lanes(self) -> int:
        return self.value("lanes")

    def sources(self) -> list:
        """The source keys this record cites, in first-use order."""
        seen = []
        for lim in self.limits.values():
            if lim.source and lim.source not in seen:
                seen.append(lim.source)
        return seen

    def as_dict(self) -> dict:
        return {"name": self.name, "description": self.description, "vendor": self.vendor,
                "model": self.model, "unit": self.unit, "lane_word": self.lane_word,
                "matrix": self.matrix, "notes": list(self.notes),
                "limits": {k: v.as_dict() for k, v in self.limits.items()}}


# -- NVIDIA ------------------------------------------------------------------------------

_TS = "table 'Technical Specifications per Compute Capability'"


def _cuda(cc: str, smem_sm, smem_sm_src, optin, optin_src, reserved_src) -> dict:
    return {
        "lanes": L(32, "threads per warp", "cuda-pg", f"{_TS}, 'Warp size' ({cc})"),
        "max_regs_per_lane": L(255, "registers per thread", "cuda-pg",
                               f"{_TS}, 'Maximum number of 32-bit registers per thread' ({cc})"),
        "regs_per_sm": L(65536, "registers per SM", "cuda-pg",
                         f"{_TS}, 'Number of 32-bit registers per SM' ({cc}: 64K)"),
        "max_regs_per_block": L(65536, "registers per block", "cuda-pg",
                                f"{_TS}, 'Maximum number of 32-bit registers per thread "
                                f"block' ({cc}: 64K)"),
        "reg_alloc_unit": L(256, "registers per warp", "cuda-bp",
                            "'Calculating Occupancy': register allocations are rounded up to "
                            "the nearest 256 registers per warp"),
        "sub_partitions": L(4, "register partitions per SM", "cuda-occ-h",
                            "cudaOccSubPartitionsPerMultiprocessor (cc 7.x and later: 4), used "
                            "by cudaOccMaxBlocksPerSMRegsLimit"),
        "max_warps_per_sm": L(64, "warps per SM", "cuda-pg",
                              f"{_TS}, 'Maximum number of resident warps per SM' ({cc})"),
        "max_blocks_per_sm": L(32, "blocks per SM", "cuda-pg",
                               f"{_TS}, 'Maximum number of resident blocks per SM' ({cc})"),
        "max_threads_per_block": L(1024, "threads per block", "cuda-pg",
                                   f"{_TS}, 'Maximum number of threads per block' ({cc})"),
        "smem_per_sm": L(smem_sm, "bytes per SM", *smem_sm_src),
        "smem_per_block_optin": L(optin, "bytes per block", *optin_src),
        "smem_reserved_per_block": L(KB, "bytes per block", *reserved_src),
        "smem_alloc_unit": L(128, "bytes", "cuda-occ-h",
                             "cudaOccSMemAllocationGranularity (cc 8.x and 9.x: 128)"),
        "static_smem_limit": L(48 * KB, "bytes per block", "ampere-tuning",
                               "'Shared Memory': static shared memory allocations remain "
                               "limited to 48 KB"),
    }


_SM80 = _cuda("8.0", 164 * KB, ("ampere-tuning", "'Shared Memory': A100 supports 0, 8, 16, "
                                                 "32, 64, 100, 132 or 164 KB per SM"),
              163 * KB, ("cuda-pg", "'Compute Capability 8.x' > 'Shared Memory': cc 8.0 "
                                    "allows a single thread block up to 163 KB"),
              ("ampere-tuning", "'Shared Memory': CUDA reserves 1 KB of shared memory per "
                                "thread block"))
_SM80["matrix_shapes"] = L("mma.sync m16n8k16 (f16, bf16), m16n8k8 (tf32)", "shapes",
                           "ptx-isa", "9.7.14.5.8 and 9.7.14.5.7")

#: the CUDA Programming Guide section (source "cuda-pg") of every sm_90 shared-memory limit
_CC90_SMEM = "'Compute Capability 9.0' > 'Shared Memory': "
_SM90 = _cuda("9.0", 228 * KB, ("cuda-pg", _CC90_SMEM + "capacity 0, 8, ..., 196 or 228 KB per SM"),
              227 * KB, ("cuda-pg", _CC90_SMEM + "a single thread block can address up to 227 KB"),
              ("cuda-pg", _CC90_SMEM + "the 1 KB not available to a block is reserved for "
                                       "system use"))
_SM90["static_smem_limit"] = L(48 * KB, "bytes per block", "cuda-pg",
                               _CC90_SMEM + "allocations over 48 KB per block must use dynamic "
                                            "shared memory")
_SM90["matrix_shapes"] = _SM80["matrix_shapes"]


# -- AMD ---------------------------------------------------------------------------------

def _cdna(gfx: str, specs_row: str, shapes: str) -> dict:
    bi = "llvm-baseinfo"
    return {
        "lanes": L(64, "work-items per wave", "rocm-specs",
                   f"'Wavefront Size' column ({specs_row}: 64)"),
        "vgprs_per_simd": L(512, "VGPRs per lane per SIMD (ArchVGPRs + AccVGPRs, unified)",
                            bi, "getTotalNumVGPRs: FeatureGFX90AInsts (gfx90a, gfx94x) -> 512"),
        "vgpr_file_per_cu": L(512 * KB, "bytes per CU", "rocm-specs",
                              f"'VGPR File (KiB)' column ({specs_row}: 512)"),
        "vgpr_granule": L(8, "VGPRs", bi, "getVGPRAllocGranule: FeatureGFX90AInsts -> 8"),
        "max_arch_vgprs": L(256, "ArchVGPRs per lane", bi, "getAddressableNumArchVGPRs -> 256"),
        "max_acc_vgprs": L(256, "AccVGPRs per lane", "llvm-usage",
                           "'DWARF Register Mapping': AGPR0-AGPR255 (vector accumulation "
                           "registers)"),
        "max_vgprs": L(512, "VGPRs per lane (unified)", bi,
                       "getAddressableNumVGPRs: FeatureGFX90AInsts -> 512"),
        "acc_offset_granule": L(4, "VGPRs", "llvm-d119912",
                                "total = alignTo(ArchVGPRs, 4) + AccVGPRs on gfx90a"),
        "max_waves_per_simd": L(8, "waves per SIMD", bi, "getMaxWavesPerEU: isGFX90A -> 8"),
        "simds_per_cu": L(4, "SIMDs per CU", bi, "getEUsPerCU: pre-gfx10 CU has four SIMDs"),
        "lds_per_cu": L(64 * KB, "bytes per CU", "rocm-specs",
                        f"'LDS (KiB)' column ({specs_row}: 64)"),
        "lds_per_group": L(64 * KB, "bytes per workgroup", "rocm-occ",
                           "'Compute the occupancy of a kernel': occ_lds = floor(65536 / L)"),
        "lds_granule": L(512, "bytes", "llvm-usage",
                         "compute_pgm_rsrc2 GRANULATED_LDS_SIZE: GFX7-GFX9 roundup(lds-size "
                         "/ (128 * 4))"),
        "max_groups_per_cu": L(16, "workgroups per CU (multi-wave groups)", bi,
                               "getMaxWorkGroupsPerCU: MaxBarriers = 16 (pre-gfx10)"),
        "max_group_threads": L(1024, "work-items per workgroup", bi,
                               "getMaxFlatWorkGroupSize -> 1024"),
        "sgprs_per_simd": L(800, "SGPRs per SIMD", bi, "getTotalNumSGPRs: gfx8+ -> 800"),
        "max_sgprs": L(102, "SGPRs per wave", bi, "getAddressableNumSGPRs: gfx8/gfx9 -> 102"),
        "matrix_shapes": L(shapes, "shapes", "amd-mic", f"--architecture {gfx} "
                           "--list-instructions / --detail-instruction"),
    }


_CDNA2 = _cdna("cdna2", "MI250X, MI250, MI210 (gfx90a)",
               "v_mfma_f32_16x16x16f16, v_mfma_f32_32x32x8f16, v_mfma_f32_16x16x16bf16_1k, "
               "v_mfma_f32_32x32x8bf16_1k, v_mfma_f32_16x16x4f32, v_mfma_f32_32x32x2f32")
_CDNA3 = _cdna("cdna3", "MI325X, MI300X, MI300A (gfx942)",
               "v_mfma_f32_16x16x16_f16, v_mfma_f32_32x32x8_f16, v_mfma_f32_16x16x16_bf16, "
               "v_mfma_f32_32x32x8_bf16, v_mfma_f32_16x16x4_f32, v_mfma_f32_32x32x2_f32")

_RDNA3 = {
    "lanes": L(32, "work-items per wave (wave32)", "rocm-specs",
               "'Wavefront Size' column (Radeon RX 7900 XTX, gfx1100: 32)"),
    "vgprs_per_simd": L(1536, "VGPRs per lane per SIMD (wave32)", "llvm-baseinfo",
                        "getTotalNumVGPRs: Feature1_5xVGPRs (gfx1100, gfx1101), wave32 -> 1536"),
    "vgpr_file_per_cu": L(768 * KB, "bytes per WGP", "rocm-specs",
                          "'VGPR File (KiB)' column (Radeon RX 7900 XTX: 768)"),
    "vgpr_granule": L(24, "VGPRs", "llvm-baseinfo",
                      "getVGPRAllocGranule: Feature1_5xVGPRs, wave32 -> 24"),
    "max_arch_vgprs": L(256, "VGPRs per lane", "llvm-baseinfo",
                        "getAddressableNumVGPRs (no GFX90A insts) -> 256"),
    "max_waves_per_simd": L(16, "waves per SIMD", "llvm-baseinfo",
                            "getMaxWavesPerEU: GFX10.3 and later -> 16"),
    "simds_per_cu": L(4, "SIMDs per WGP", "llvm-baseinfo",
                      "getEUsPerCU: gfx10+ in WGP mode, two CUs -> 4"),
    "lds_per_cu": L(128 * KB, "bytes per WGP", "rocm-specs",
                    "'LDS (KiB)' column (Radeon RX 7900 XTX: 128)"),
    "lds_per_group": L(64 * KB, "bytes per workgroup", "llvm-d139468",
                       "addressable local memory is 64 KiB on gfx10+ even in WGP mode"),
    "lds_granule": missing("bytes", "the AMDGPUUsage copy read gives GRANULATED_LDS_SIZE "
                                    "only for GFX6-GFX9; not rounded here"),
    "max_groups_per_cu": L(32, "workgroups per WGP (multi-wave groups)", "llvm-baseinfo",
                           "getMaxWorkGroupsPerCU: gfx10+ WGP mode MaxBarriers = 32"),
    "max_group_threads": L(1024, "work-items per workgroup", "llvm-baseinfo",
                           "getMaxFlatWorkGroupSize -> 1024"),
    "sgprs_per_simd": missing("SGPRs", "SGPRs do not limit waves on gfx10+ "
                                       "(llvm getOccupancyWithNumSGPRs returns the maximum)"),
    "matrix_shapes": L("v_wmma_f32_16x16x16_f16, v_wmma_f32_16x16x16_bf16 (wave32)", "shapes",
                       "amd-mic", "--architecture rdna3 --list-instructions, --wavefront 32"),
}

# -- Arm ---------------------------------------------------------------------------------

_MALI = {
    "lanes": L(16, "threads per warp", "arm-valhall",
               "'Arithmetic processing': Valhall uses 16-wide warps (Arm Mali GPU Datasheet "
               "2021: warp width 16 for G57/G77/G68/G78)"),
    "max_regs_per_lane": L(64, "32-bit work registers per thread", "arm-ocl",
                           "9.6 'Avoid excessive register usage': every thread has 64 32-bit "
                           "working registers"),
    "full_occupancy_regs": L(32, "32-bit work registers per thread", "arm-valhall",
                             "'Thread state': up to 32 x 32-bit registers while maintaining "
                             "full thread occupancy; up to 64 at a reduced thread count"),
    "reg_alloc_steps": L("32 or 64", "work registers", "arm-forum-regs",
                         "Bifrost/Valhall allocate work registers as 32 or 64"),
    "thread_capacity": L(1024, "threads per shader core", "arm-datasheet",
                         "'Thread count (max)' (Mali-G78: 1024)"),
    "capacity_divisor_above_full": L(2, "thread capacity divisor", "arm-bp",
                                     "8.1 'Workgroup sizes': a fixed number of registers per "
                                     "shader core is split across a variable number of "
                                     "threads; with 32- or 64-register allocations "
                                     "(arm-forum-regs) 64 registers give half the threads"),
    "lds_per_cu": missing("bytes", "no per-core shared-memory capacity is documented in the "
                                   "sources read (Mali keeps workgroup shared memory in the "
                                   "load/store cache path)"),
    "matrix_shapes": missing("shapes", "no compute matrix instruction is documented for "
                                       "Valhall gen 2 in the sources read"),
}

# -- Qualcomm ----------------------------------------------------------------------------

_ADRENO = {
    "lanes": L(64, "fibers per wave", "mesa-ir3",
               "ir3_compiler_create: threadsize_base = 64 for a6xx and later"),
    "lanes_double": L(128, "fibers per wave (double threadsize)", "mesa-ir3",
                      "freedreno_devices.py a7xx_base: supports_double_threadsize = True"),
    "reg_file_vec4": L(96, "vec4 registers per fiber slot (reg_size_vec4)", "mesa-ir3",
                       "freedreno_devices.py a7xx_base: reg_size_vec4 = 96"),
    "max_regs_per_lane": L(192, "32-bit registers per fiber (48 vec4)", "mesa-ir3",
                           "ir3_ra.h: RA_FULL_SIZE = 4 * 48 * 2 half registers"),
    "wave_granularity": L(2, "waves", "mesa-ir3", "ir3_compiler_create: wave_granularity = 2"),
    "max_waves": L(16, "waves per SP", "mesa-ir3", "ir3_compiler_create: max_waves = 16"),
    "lds_per_cu": L(32 * KB, "bytes of local (shared) memory", "mesa-ir3",
                    "ir3_compiler_create: local_mem_size = 32 * 1024"),
    "lds_granule": L(KB, "bytes", "mesa-ir3",
                     "ir3_get_reg_independent_max_waves: shared is allocated in chunks of 1k"),
    "matrix_shapes": missing("shapes", "no matrix instruction is documented for Adreno 7xx "
                                       "in the sources read"),
}

TARGETS: dict[str, Target] = {
    "sm_80": Target("sm_80", "NVIDIA Ampere A100 (compute capability 8.0)", "NVIDIA",
                    "cuda", "SM", "warp", _SM80, "nvidia"),
    "sm_90": Target("sm_90", "NVIDIA Hopper H100/H200 (compute capability 9.0)", "NVIDIA",
                    "cuda", "SM", "warp", _SM90, "nvidia"),
    "cdna2": Target("cdna2", "AMD CDNA2 gfx90a (MI210, MI250, MI250X)", "AMD", "amd", "CU",
                    "wave", _CDNA2, "cdna2",
                    ("ArchVGPRs and AccVGPRs share one 512-entry file per lane",)),
    "cdna3": Target("cdna3", "AMD CDNA3 gfx942 (MI300X, MI300A, MI325X)", "AMD", "amd", "CU",
                    "wave", _CDNA3, "cdna3",
                    ("ArchVGPRs and AccVGPRs share one 512-entry file per lane",
                     "ROCm's MI300X occupancy prose says 'blocks of 16'; its own table "
                     "(<=168 VGPRs: 3 waves) and LLVM use 8: 8 is used here")),
    "rdna3": Target("rdna3", "AMD RDNA3 gfx1100/gfx1101 (RX 7900, Radeon PRO W7900), wave32, "
                    "WGP mode", "AMD", "amd", "WGP", "wave", _RDNA3, "rdna3",
                    ("gfx1102/gfx1103 have 1024 VGPRs per SIMD lane (granule 16): not "
                     "modelled",)),
    "mali-valhall": Target("mali-valhall", "Arm Mali-G78 shader core (Valhall gen 2)", "Arm",
                           "mali", "shader core", "warp", _MALI, None,
                           ("Mali-G710 (Valhall gen 3) holds 2048 threads per core "
                            "(Arm Community blog 'Mali-G710 developer overview'): not "
                            "modelled",)),
    "adreno-7xx": Target("adreno-7xx", "Qualcomm Adreno 7xx (a7xx), as Mesa's ir3 models it",
                         "Qualcomm", "adreno", "SP", "wave", _ADRENO, None,
                         ("numbers from Mesa's reverse-engineered freedreno driver, not from "
                          "Qualcomm documents; Qualcomm 80-NB295-11 gives the terms (waves, "
                          "fibers, register footprint) but no numbers in the copy read",)),
}
TARGET_NAMES = tuple(TARGETS)


class UnknownTarget(ValueError):
    """An ``--arch`` name that is not in :data:`TARGETS`; ``known`` lists them."""
    def __init__(self, name: str):
        self.known = TARGET_NAMES
        super().__init__(f"unknown --arch {name!r}; known: {', '.join(TARGET_NAMES)}, all")


def get_target(name: str) -> Target:
    """The record for ``name`` (case-insensitive; ``mali``/``adreno`` accepted as
    short names). Raises :class:`UnknownTarget` (a ValueError)."""
    key = name.strip().lower().replace("-", "_")
    for t in TARGETS.values():
        if key in (t.name.replace("-", "_"), t.name.split("-")[0].replace("-", "_")):
            return t
    raise UnknownTarget(name)


def sm_limits(target: Target) -> SmLimits:
    """The cuda_occupancy.h inputs (:class:`~microkernel.gpu.occupancy.SmLimits`)
    of an NVIDIA target. ValueError for a non-CUDA target."""
    if target.model != "cuda":
        raise ValueError(f"{target.name} is not an NVIDIA target")
    v = target.value
    return SmLimits(name=target.name, warp_size=v("lanes"), regs_per_sm=v("regs_per_sm"),
                    reg_alloc_unit=v("reg_alloc_unit"),
                    max_regs_per_thread=v("max_regs_per_lane"),
                    max_regs_per_block=v("max_regs_per_block"),
                    sub_partitions=v("sub_partitions"), max_warps_per_sm=v("max_warps_per_sm"),
                    max_blocks_per_sm=v("max_blocks_per_sm"),
                    max_threads_per_block=v("max_threads_per_block"),
                    smem_per_sm=v("smem_per_sm"), smem_per_block_optin=v("smem_per_block_optin"),
                    smem_reserved_per_block=v("smem_reserved_per_block"),
                    smem_alloc_unit=v("smem_alloc_unit"), sm_count=None)
