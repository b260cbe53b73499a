"""The documents behind every limit in :mod:`microkernel.gpu.targets`, as data.

Each :class:`Source` names one document (or one file of a public repository, at the
commit that was read), where it lives, and what kind of authority it is: a vendor
manual, vendor source code, a compiler's source, a reverse-engineered driver, or a
vendor engineer's forum answer. A :class:`~microkernel.gpu.targets.Limit` refers to
a source by key and adds the section (or function, table, page) the value is in.

These are the copies that were read for issue 25 (December 2026). Nothing here is
fetched at run time; :func:`cite` formats a key + section for the report.
"""
from __future__ import annotations

import dataclasses

__all__ = ["Source", "SOURCES", "cite"]


@dataclasses.dataclass(frozen=True)
class Source:
    """One document. ``kind``: ``vendor-doc`` (a vendor's manual or guide),
    ``vendor-code`` (a header or tool the vendor ships), ``compiler`` (an open
    compiler's source: its numbers are what the toolchain assumes),
    ``reverse-engineered`` (an open driver written without vendor documents),
    ``vendor-forum`` (a vendor engineer's public answer)."""
    key: str
    title: str
    where: str
    kind: str


def _s(key, title, where, kind="vendor-doc"):
    return key, Source(key, title, where, kind)


SOURCES: dict[str, Source] = dict([
    # -- NVIDIA --------------------------------------------------------------------
    _s("cuda-pg", "NVIDIA CUDA C++ Programming Guide",
       "docs.nvidia.com/cuda/cuda-c-programming-guide (section 'Compute Capabilities', "
       "table 'Technical Specifications per Compute Capability'; 'Compute Capability "
       "8.x' > 'Shared Memory')"),
    _s("cuda-bp", "NVIDIA CUDA C++ Best Practices Guide",
       "docs.nvidia.com/cuda/cuda-c-best-practices-guide (section 'Occupancy' > "
       "'Calculating Occupancy')"),
    _s("ampere-tuning", "NVIDIA Ampere GPU Architecture Tuning Guide",
       "docs.nvidia.com/cuda/ampere-tuning-guide (section 'Shared Memory')"),
    _s("cuda-occ-h", "CUDA Toolkit include/cuda_occupancy.h",
       "CUDA Toolkit header (functions cudaOccSMemAllocationGranularity, "
       "cudaOccRegAllocationGranularity, cudaOccSubPartitionsPerMultiprocessor, "
       "cudaOccMaxBlocksPerMultiprocessor, cudaOccMaxBlocksPerSMRegsLimit)",
       "vendor-code"),
    _s("ptx-isa", "NVIDIA Parallel Thread Execution ISA (PTX ISA 8.x)",
       "docs.nvidia.com/cuda/parallel-thread-execution, section 9.7.14.5.8 'Matrix "
       "Fragments for mma.m16n8k16 with floating point type' and 9.7.14.5.7 (m16n8k8)"),
    # -- AMD -----------------------------------------------------------------------
    _s("rocm-specs", "ROCm documentation: Accelerator and GPU hardware specifications",
       "github.com/ROCm/ROCm docs/reference/gpu-arch-specs.rst @ e396b48 "
       "(rocm.docs.amd.com/en/latest/reference/gpu-arch-specs.html)"),
    _s("rocm-occ", "ROCm documentation: Workload optimization (MI300X)",
       "github.com/ROCm/ROCm docs/how-to/rocm-for-ai/inference-optimization/workload.rst "
       "@ e396b48: figure 'Occupancy related to VGPRs usage on an Instinct MI300X "
       "accelerator' (docs/data/shared/occupancy-vgpr.png) and section 'Compute the "
       "occupancy of a kernel'"),
    _s("amd-mic", "AMD Matrix Instruction Calculator",
       "github.com/ROCm/amd_matrix_instruction_calculator matrix_calculator.py @ 2ef9189 "
       "(--detail-instruction / --get-register / --matrix-entry output)", "vendor-code"),
    _s("llvm-baseinfo", "LLVM AMDGPU backend, Utils/AMDGPUBaseInfo.cpp (namespace IsaInfo)",
       "github.com/llvm/llvm-project llvm/lib/Target/AMDGPU/Utils/AMDGPUBaseInfo.cpp "
       "(getVGPRAllocGranule, getTotalNumVGPRs, getAddressableNumVGPRs, "
       "getAddressableNumArchVGPRs, getMaxWavesPerEU, getEUsPerCU, getMaxWorkGroupsPerCU, "
       "getNumWavesPerEUWithNumVGPRs, getOccupancyWithNumSGPRs, getTotalNumSGPRs, "
       "getLocalMemorySize)", "compiler"),
    _s("llvm-d138443", "LLVM review D138443, unit test TestVGPRLimitsPerOccupancy",
       "reviews.llvm.org/D138443 (printed table 'gfx90a gfx940: Occ MinVGPR MaxVGPR')",
       "compiler"),
    _s("llvm-d119912", "LLVM review D119912: getTotalNumVGPRs(has90AInsts, AGPRs, VGPRs)",
       "reviews.llvm.org/D119912 (gfx90a: total = alignTo(ArchVGPRs, 4) + AccVGPRs)",
       "compiler"),
    _s("llvm-d139468", "LLVM review D139468: occupancy with local memory size",
       "reviews.llvm.org/D139468 (addressable LDS is 64 KiB on gfx10+ even in WGP mode)",
       "compiler"),
    _s("llvm-usage", "LLVM documentation: User Guide for AMDGPU Backend (AMDGPUUsage)",
       "llvm.org/docs/AMDGPUUsage.html, table 'compute_pgm_rsrc2' field "
       "GRANULATED_LDS_SIZE ('GFX7-GFX9: roundup(lds-size / (128 * 4))')", "compiler"),
    _s("llvm-calc-occ", "LLVM documentation: llvm-calc-occupancy - AMDGPU occupancy calculator",
       "llvm.org/docs/CommandGuide/llvm-calc-occupancy.html (section 'EXAMPLE')", "compiler"),
    # -- Arm -----------------------------------------------------------------------
    _s("arm-valhall", "Arm: The Valhall Shader Core (Learn the basics, 102203 issue 01)",
       "developer.arm.com .../learn-the-basics/the-valhall-shader-core (sections 'Thread "
       "state' and 'Arithmetic processing')"),
    _s("arm-ocl", "Arm Mali GPU OpenCL Developer Guide (101574 version 3.2)",
       "infocenter.arm.com com.arm.doc.101574_0302_00_en, section 9.6 'Mali Bifrost and "
       "Valhall GPU specific optimizations' ('Avoid excessive register usage', "
       "Table 9-1 'Adjacent threads')"),
    _s("arm-datasheet", "Arm Mali GPU Datasheet (2021)",
       "Arm Mali GPU Datasheet 2021, 'Core Config' rows 'Warp width' and 'Thread count "
       "(max)' (Mali-G57, G77, G68, G78 columns)"),
    _s("arm-bp", "Arm Mali GPU Best Practices Developer Guide (version 2.1)",
       "developer.arm.com .../mali-gpu-best-practices, section 8.1 'Workgroup sizes'"),
    _s("arm-forum-regs", "Arm Community forum: 'want to know more detail about GPU register "
       "number' (answer by Arm staff)",
       "community.arm.com/.../f/discussions/51241 ('Bifrost/Valhall: 32, or 64' work "
       "registers)", "vendor-forum"),
    # -- Qualcomm ------------------------------------------------------------------
    _s("qcom-ocl", "Qualcomm Snapdragon Mobile Platform OpenCL General Programming and "
       "Optimization (80-NB295-11 A)",
       "Qualcomm Technologies, 80-NB295-11 A, November 2017 (Adreno waves and fibers, "
       "SP; section numbers not verified in the stored copy)"),
    _s("mesa-ir3", "Mesa freedreno ir3 compiler (open Adreno driver)",
       "gitlab.freedesktop.org/mesa/mesa src/freedreno/ir3/ir3_compiler.c "
       "(ir3_compiler_create: wave_granularity, max_waves, threadsize_base, "
       "local_mem_size), ir3.c (ir3_get_reg_dependent_max_waves, "
       "ir3_get_reg_independent_max_waves), ir3_ra.h (RA_FULL_SIZE), "
       "src/freedreno/common/freedreno_devices.py (a7xx_base: reg_size_vec4, "
       "supports_double_threadsize)", "reverse-engineered"),
])


def cite(key: str, section: str = "") -> str:
    """``"<title>, <section>"`` for a source key. KeyError for an unknown key."""
    src = SOURCES[key]
    return f"{src.title}, {section}" if section else src.title
