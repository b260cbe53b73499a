"""GPU targets as models (issue 25): the limits table, the occupancy models against
the documents' worked examples, the AMD fragment layouts, the --arch port report.

Every expected value below is written from a document (cited at the test) or
computed by hand from a documented formula, not by the code under test. Nothing here
needs a GPU or numba.
"""
import dataclasses
import json

import numpy as np
import pytest

from microkernel.cli import main
from microkernel.gpu import fragments_amd as FA
from microkernel.gpu import occupancy_models as M
from microkernel.gpu import port_targets as P
from microkernel.gpu import targets as T
from microkernel.gpu.fragments import FragmentLayout
from microkernel.gpu.occupancy import SM90
from microkernel.gpu.sources import SOURCES

ALL = ["sm_80", "sm_90", "cdna2", "cdna3", "rdna3", "mali-valhall", "adreno-7xx"]


# -- the table ----------------------------------------------------------------------------

def test_the_seven_targets_are_there():
    assert list(T.TARGETS) == ALL


@pytest.mark.parametrize("name", ALL)
def test_every_limit_has_a_source_and_section(name):
    t = T.TARGETS[name]
    assert t.limits["lanes"].value in (16, 32, 64)
    for key, lim in t.limits.items():
        if lim.value is None:
            assert lim.why_missing, key
        else:
            assert lim.source in SOURCES and lim.section, key


def test_a_limit_without_a_source_is_refused():
    with pytest.raises(ValueError, match="source"):
        T.Limit(64, "registers", None)
    with pytest.raises(ValueError, match="source"):
        T.Limit(64, "registers", "no-such-document", "section")
    with pytest.raises(ValueError, match="why_missing"):
        T.Limit(None, "registers", None)


def test_sm90_record_equals_occupancy_sm90():
    # occupancy.py's SM90 (cuda_occupancy.h + CUDA PG table, 9.0) and the sm_90 record
    # must not drift apart; the SM count is a device property and not in the table.
    assert T.sm_limits(T.TARGETS["sm_90"]) == dataclasses.replace(SM90, sm_count=None)


def test_amd_register_files_agree_with_rocm_specs():
    # LLVM's VGPRs per SIMD lane x SIMDs x lanes x 4 bytes = ROCm's "VGPR File (KiB)":
    # CDNA2/3 4 x 512 x 64 x 4 = 512 KiB; RDNA3 (wave32) 4 x 1536 x 32 x 4 = 768 KiB.
    for name, kib in (("cdna2", 512), ("cdna3", 512), ("rdna3", 768)):
        t = T.TARGETS[name]
        assert (t.value("simds_per_cu") * t.value("vgprs_per_simd") * t.lanes * 4
                == kib * 1024 == t.value("vgpr_file_per_cu"))


def test_unknown_target_lists_the_known_ones():
    with pytest.raises(T.UnknownTarget) as e:
        T.get_target("gfx9000")
    assert all(n in str(e.value) for n in ALL)
    assert T.get_target("MALI").name == "mali-valhall"
    with pytest.raises(ValueError, match="not documented"):
        T.TARGETS["rdna3"].value("lds_granule")


# -- occupancy: NVIDIA -------------------------------------------------------------------

@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("threads, blocks, warps", [(128, 12, 48), (320, 4, 40)])
def test_cuda_best_practices_37_registers(arch, threads, blocks, warps):
    # CUDA C++ Best Practices Guide, "Calculating Occupancy": 37 registers per thread,
    # 128-thread blocks: 75% with 12 blocks; 320-thread blocks: 63%, four blocks. The
    # guide's example is cc 7.0, whose limits (65536 registers, 64 warps, 256 per warp,
    # 4 partitions) are those of 8.0 and 9.0 in the CUDA PG table.
    o = M.occupancy_for(T.TARGETS[arch], 37, threads)
    assert (o.groups, o.waves, o.limiter) == (blocks, warps, "registers")
    assert round(o.fraction * 100) == (75 if threads == 128 else 62)


def test_cuda_block_slots_and_shared_memory_sm80():
    t = T.TARGETS["sm_80"]
    # 32-thread blocks, few registers: the 32-block slot limit (CUDA PG table): 32 warps.
    o = M.occupancy_for(t, 16, 32)
    assert (o.groups, o.waves, o.limiter) == (32, 32, "blocks")
    # Ampere tuning guide: 164 KB per SM, 1 KB reserved per block; 128-byte units
    # (cuda_occupancy.h): 100 KB -> 101 KB -> 1 block; 48 KB -> 49 KB -> 3 blocks.
    assert M.occupancy_for(t, 32, 256, 100 * 1024).groups == 1
    assert M.occupancy_for(t, 32, 256, 48 * 1024).limits["shared"] == 3
    assert M.occupancy_for(t, 32, 256, 164 * 1024).error        # > 163 KB per block


# -- occupancy: AMD CDNA -------------------------------------------------------------------

# ROCm "Workload optimization", figure "Occupancy related to VGPRs usage on an
# Instinct MI300X accelerator": VGPRs -> waves per EU / per CU.
MI300X_TABLE = [(64, 8, 32), (72, 7, 28), (80, 6, 24), (96, 5, 20), (128, 4, 16),
                (168, 3, 12), (256, 2, 8)]


@pytest.mark.parametrize("arch", ["cdna2", "cdna3"])
@pytest.mark.parametrize("vgprs, per_eu, per_cu", MI300X_TABLE)
def test_mi300x_vgpr_table(arch, vgprs, per_eu, per_cu):
    t = T.TARGETS[arch]
    assert M.amd_vgpr_waves(t, vgprs) == per_eu
    assert M.amd_vgpr_waves(t, vgprs + 1) == per_eu - 1          # one past the boundary
    o = M.occupancy_for(t, vgprs, 64)                             # one-wave workgroups
    assert (o.waves, o.max_waves) == (per_cu, 32)


def test_rocm_prose_example_170_vgprs():
    # ROCm workload.rst: "If the current VGPR usage is 170, it will be rounded up to 176
    # ... the occupancy is limited to 2 waves per EU because 176 x 3 > 512".
    t = T.TARGETS["cdna3"]
    o = M.occupancy_for(t, 170, 64)
    assert (o.alloc_regs, M.amd_vgpr_waves(t, 170)) == (176, 2)


def test_unified_vgprs_with_accvgprs():
    t = T.TARGETS["cdna3"]
    # LLVM D138443 (gfx90a, gfx940): 257..512 VGPRs -> 1 wave; reachable only with
    # AccVGPRs. D119912: total = alignTo(arch, 4) + acc: 50 + 256 -> 52 + 256 = 308.
    assert M.amd_vgprs(t, 50, 256) == 308
    assert M.amd_vgpr_waves(t, 308) == 1 and M.amd_vgpr_waves(t, 512) == 1
    o = M.occupancy_for(t, 52, 256, acc_regs=128)               # 180 -> 184: 2 waves
    assert (o.regs, o.alloc_regs, o.waves) == (180, 184, 8)
    assert M.occupancy_for(t, 257, 64).error                     # > 256 ArchVGPRs
    assert M.occupancy_for(t, 64, 64, acc_regs=257).error        # > 256 AccVGPRs
    with pytest.raises(ValueError, match="AccVGPRs"):
        M.occupancy_for(T.TARGETS["rdna3"], 64, 64, acc_regs=8)


def test_llvm_calc_occupancy_example():
    # llvm-calc-occupancy docs, EXAMPLE: -mcpu=gfx90a --wg-size=512 --vgprs=50
    # --sgprs=30 -> 8 waves/EU (32 waves/CU), limited by workgroup size / LDS, VGPRs.
    o = M.occupancy_for(T.TARGETS["cdna2"], 50, 512, sgprs=30)
    assert (o.waves, o.max_waves) == (32, 32)
    assert "VGPRs" in o.limiter and "wave slots" in o.limiter


def test_cdna_lds_and_sgprs():
    t = T.TARGETS["cdna3"]
    # ROCm: occ_lds = floor(65536 / L); LLVM: LDS in 512-byte granules. 20000 B ->
    # 20480 B -> 3 workgroups of 4 waves = 12 waves per CU.
    o = M.occupancy_for(t, 32, 256, 20000)
    assert (o.limits["LDS"], o.waves, o.limiter) == (3, 12, "LDS")
    # LLVM getOccupancyWithNumSGPRs (gfx9): 101+ SGPRs -> 7 waves per SIMD.
    assert M.occupancy_for(t, 32, 64, sgprs=104).waves == 28
    assert M.occupancy_for(t, 32, 64, 70000).error               # > 64 KiB per group


# -- occupancy: RDNA3, Mali, Adreno -----------------------------------------------------

@pytest.mark.parametrize("vgprs, waves", [(24, 16), (96, 16), (97, 12), (128, 10),
                                          (192, 8), (256, 5)])
def test_rdna3_wave32_vgprs(vgprs, waves):
    # LLVM getNumWavesPerEUWithNumVGPRs with gfx1100's Feature1_5xVGPRs (wave32: 1536
    # VGPRs, granule 24) and 16 waves per SIMD, by hand: 97 -> 120 -> 12; 128 -> 144 -> 10; 256 -> 264 -> 5.
    assert M.amd_vgpr_waves(T.TARGETS["rdna3"], vgprs) == waves


@pytest.mark.parametrize("regs, warps", [(1, 64), (32, 64), (33, 32), (64, 32)])
def test_mali_register_threshold(regs, warps):
    # Arm "The Valhall Shader Core", Thread state: up to 32 registers keep full thread
    # occupancy, up to 64 at a reduced count (half: 32/64-register allocations);
    # Mali GPU Datasheet: 1024 threads, 16-wide warps -> 64 warps per core.
    o = M.occupancy_for(T.TARGETS["mali-valhall"], regs, 64)
    assert (o.waves, o.max_waves) == (warps, 64)
    assert ("half" in o.limiter) == (regs > 32)


def test_mali_spills_past_64_registers_and_whole_workgroups():
    t = T.TARGETS["mali-valhall"]
    assert M.occupancy_for(t, 65, 64).error                      # OpenCL guide 9.6
    assert M.occupancy_for(t, 40, 384).groups == 1               # 512 // 384
    assert M.occupancy_for(t, 40, 1024).error                    # 1024 > 512 at 40 regs


@pytest.mark.parametrize("regs, wave128, waves", [(4, False, 16), (124, False, 6),
                                                  (192, False, 4), (124, True, 2)])
def test_adreno_mesa_register_footprint(regs, wave128, waves):
    # Mesa ir3_get_reg_dependent_max_waves, by hand: (96 // (ceil(regs/4) * d)) * 2,
    # capped at 16: 124 -> 31 vec4 -> 3 * 2 = 6; 192 -> 48 -> 4; 128-fiber: 96 // 62 = 1.
    o = M.occupancy_for(T.TARGETS["adreno-7xx"], regs, 64, wave128=wave128)
    assert o.waves == waves


def test_adreno_shared_memory_and_spill():
    t = T.TARGETS["adreno-7xx"]
    # ir3_get_reg_independent_max_waves: 256 fibers -> ceil(256 / 128) = 2; 16 KiB ->
    # 32 KiB // 16 KiB = 2 groups; 2 * 2 * 2 = 8 waves.
    o = M.occupancy_for(t, 16, 256, 16 * 1024)
    assert (o.limits["shared memory"], o.waves) == (8, 8)
    assert M.occupancy_for(t, 193, 64).error


# -- AMD fragment layouts -------------------------------------------------------------------

@pytest.mark.parametrize("key", sorted(FA.AMD_INSTRUCTIONS))
def test_every_element_owned_exactly_once(key):
    ins = FA.AMD_INSTRUCTIONS[key]
    for lay in (ins.a, ins.b, ins.c):
        lay.check()
        lanes = getattr(lay, "physical_lanes", lay.lanes)
        reps = getattr(lay, "replicas", 1)
        counts = np.zeros((lay.rows, lay.cols), int)
        for lane in range(lanes):
            for reg in range(lay.regs):
                for half in range(lay.per_reg):
                    elem = (lay.physical_element(lane, reg, half) if reps > 1
                            else lay.element(lane, reg, half))
                    counts[elem] += 1
        assert (counts == reps).all()                            # once per replica
        assert lanes == ins.wave
    assert (ins.a.rows, ins.a.cols, ins.b.rows, ins.b.cols) == (ins.m, ins.k, ins.k, ins.n)


# (instruction, operand, (row, col), (lane, reg, half)) printed by the AMD Matrix
# Instruction Calculator: --get-register -I/-J/-K or --matrix-entry -r/-l, e.g.
# "A[5][6] = v1{21}.[15:0]" is (5, 6) -> lane 21, reg 1, half 0.
CALCULATOR = [
    ("cdna3.v_mfma_f32_16x16x16_f16", "A", (5, 6), (21, 1, 0)),
    ("cdna3.v_mfma_f32_16x16x16_f16", "B", (13, 9), (57, 0, 1)),
    ("cdna3.v_mfma_f32_16x16x16_f16", "C", (11, 3), (35, 3, 0)),
    ("cdna3.v_mfma_f32_16x16x16_bf16", "A", (15, 10), (47, 1, 0)),
    ("cdna3.v_mfma_f32_16x16x16_bf16", "A", (15, 11), (47, 1, 1)),
    ("cdna3.v_mfma_f32_32x32x8_f16", "A", (20, 7), (52, 1, 1)),
    ("cdna3.v_mfma_f32_32x32x8_f16", "B", (5, 17), (49, 0, 1)),
    ("cdna3.v_mfma_f32_32x32x8_f16", "C", (13, 30), (62, 5, 0)),
    ("cdna3.v_mfma_f32_32x32x8_f16", "C", (31, 0), (32, 15, 0)),
    ("cdna3.v_mfma_f32_32x32x8_f16", "C", (21, 8), (40, 9, 0)),
    ("cdna3.v_mfma_f32_16x16x4_f32", "A", (7, 3), (55, 0, 0)),
    ("cdna3.v_mfma_f32_32x32x2_f32", "C", (24, 7), (7, 12, 0)),
    ("cdna2.v_mfma_f32_32x32x8f16", "C", (13, 30), (62, 5, 0)),
    ("cdna2.v_mfma_f32_16x16x16f16", "A", (15, 15), (63, 1, 1)),
    ("cdna2.v_mfma_f32_16x16x4f32", "C", (14, 1), (49, 2, 0)),
    ("cdna2.v_mfma_f32_32x32x2f32", "B", (1, 3), (35, 0, 0)),
    ("rdna3.v_wmma_f32_16x16x16_f16", "C", (7, 5), (21, 3, 0)),
    ("rdna3.v_wmma_f32_16x16x16_f16", "C", (11, 4), (20, 5, 0)),
    ("rdna3.v_wmma_f32_16x16x16_f16", "C", (15, 15), (31, 7, 0)),
    ("rdna3.v_wmma_f32_16x16x16_f16", "C", (0, 0), (0, 0, 0)),
    ("rdna3.v_wmma_f32_16x16x16_f16", "A", (3, 9), (3, 4, 1)),
    ("rdna3.v_wmma_f32_16x16x16_f16", "B", (4, 12), (12, 2, 0)),
]


@pytest.mark.parametrize("key, op, elem, place", CALCULATOR)
def test_lane_placements_match_the_calculator(key, op, elem, place):
    lay = FA.AMD_INSTRUCTIONS[key].layouts()[op]
    assert lay.owner(*elem) == place
    assert lay.element(place[0] % lay.lanes, place[1], place[2]) == elem


def test_wmma_a_and_b_are_replicated_in_lanes_i_and_i_plus_16():
    # Calculator: "A[3][9] = v4{3}.[31:16]" and "A[3][9] = v4{19}.[31:16]";
    # "v0{31}.[15:0] = B[0][15]", "v0{31}.[31:16] = B[1][15]".
    ins = FA.get_instruction("v_wmma_f32_16x16x16_f16")
    assert ins.a.owners_all(3, 9) == [(3, 4, 1), (19, 4, 1)]
    assert ins.b.physical_element(31, 0, 0) == (0, 15)
    assert ins.b.physical_element(31, 0, 1) == (1, 15)
    with pytest.raises(IndexError):
        ins.b.physical_element(32, 0, 0)


def test_a_non_bijective_layout_is_refused():
    with pytest.raises(ValueError, match="owned twice"):
        FA.ReplicatedLayout("bad", "A", 16, 16, 8, 2, "f16", lambda l, r, h: (l, r), "",
                            16, replicas=2)
    with pytest.raises(ValueError):
        FragmentLayout("bad", "C", 16, 16, 4, 1, "f32", lambda l, r, h: (l % 16, r), "", 64)


@pytest.mark.parametrize("key", sorted(FA.AMD_INSTRUCTIONS))
def test_mfma_model_computes_a_times_b_plus_c(key, mma_operands):
    ins = FA.AMD_INSTRUCTIONS[key]
    rng = np.random.default_rng(25)
    A, B, C = mma_operands(ins, lambda shape: rng.integers(-8, 8, shape))
    assert np.array_equal(FA.mfma(ins, A, B, C), A @ B + C)     # small integers: exact


def test_instruction_selection_by_precision():
    assert [i.mnemonic for i in FA.instructions_for("cdna3", "f16")] == \
        ["v_mfma_f32_32x32x8_f16", "v_mfma_f32_16x16x16_f16"]
    assert FA.instructions_for("cdna2", "tf32")[0].mnemonic == "v_mfma_f32_32x32x2f32"
    assert FA.instructions_for("rdna3", "tf32") == []
    with pytest.raises(ValueError):
        FA.instructions_for("cdna3", "fp8")


# -- the port model ------------------------------------------------------------------------

def test_lane_tile_rule():
    # 8x16: 128 accumulators + 2 x 24 operands + 28 = 204 <= 255 - 15: one lane.
    assert P.lane_regs(8, 16) == 204 and P.lane_regs(4, 4) == 16 + 8 + 28
    assert P.split_tile(8, 16, P.lane_budget(T.TARGETS["sm_90"])) == (8, 16)
    # Mali: 64 - 4 = 60: 8x16 (204) -> 8x8 (124) -> 8x4 (84) -> 4x4 (52).
    assert P.split_tile(8, 16, P.lane_budget(T.TARGETS["mali-valhall"])) == (4, 4)
    with pytest.raises(ValueError):
        P.split_tile(3, 5, 20)
    assert P.block_tile(8, 16, 256) == (128, 256)


def test_matrix_plans_for_avx512_8x16():
    spec = "avx512_8x16"
    from microkernel.tile import TileSpec
    s = TileSpec.from_name(spec)
    m = P.matrix_plan(s, T.TARGETS["cdna3"])
    # 128 accumulators / 16 per 32x32 fragment = 8 fragments, 2 x 4 -> 64x128 wave
    # tile; A/B one k step: 2*2 + 4*2 = 12, + 40 = 52 ArchVGPRs; 128 AccVGPRs.
    assert (m["instruction"], m["fragments_per_lane"], m["wave_tile"]) == \
        ("v_mfma_f32_32x32x8_f16", 8, [64, 128])
    assert (m["arch_regs"], m["acc_regs"], m["est_regs"]) == (52, 128, 180)
    r = P.matrix_plan(s, T.TARGETS["rdna3"])
    assert (r["instruction"], r["fragments_per_lane"], r["wave_tile"]) == \
        ("v_wmma_f32_16x16x16_f16", 16, [64, 64])
    assert r["est_regs"] == 128 + 4 * 8 + 4 * 8 + 40
    assert P.matrix_plan(s, T.TARGETS["mali-valhall"])["instruction"] is None
    n = P.matrix_plan(s, T.TARGETS["sm_90"])
    from microkernel.gpu.mma_port import plan_mma
    assert n["fragments_per_lane"] == plan_mma(spec).tile.fragments == 32


# -- the CLI -------------------------------------------------------------------------------

def test_port_arch_all_prints_every_target_and_limiter(capsys):
    assert main(["port", "avx512_8x16", "--arch", "all"]) == 0
    out = capsys.readouterr().out
    assert "not a measurement" in out and "limiter" in out
    for name in ALL:
        assert name in out
    for lim in ("registers", "VGPRs", "half thread capacity"):
        assert lim in out


def test_port_arch_all_json_has_limiters_and_sources(capsys):
    assert main(["port", "avx512_8x16", "--arch", "all", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert [t["target"] for t in rep["targets"]] == ALL
    for t in rep["targets"]:
        assert t["simt"]["occupancy"]["limiter"]
        assert t["simt"]["occupancy"]["error"] is None
        for key, lim in t["limits"].items():
            if lim["value"] is None:
                assert lim["why_missing"]
            else:
                assert lim["source_key"] in rep["sources"] and lim["source"]
    assert rep["model"] == P.MODEL


def test_port_single_arch_and_precision(capsys):
    assert main(["port", "avx512_8x16", "--arch", "cdna3", "--mma", "tf32", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert len(rep["targets"]) == 1
    assert rep["targets"][0]["matrix"]["instruction"] == "v_mfma_f32_32x32x2_f32"
    assert main(["port", "avx512_8x16", "--arch", "rdna3"]) == 0
    assert "v_wmma_f32_16x16x16_f16" in capsys.readouterr().out


def test_port_unknown_arch_exits_2_and_lists_targets(capsys):
    assert main(["port", "avx512_8x16", "--arch", "gfx9000"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("microkernel port: error: ") and all(n in err for n in ALL)
    assert main(["port", "avx512_8x16", "--arch", "gfx9000", "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["known"][:len(ALL)] == ALL
    assert main(["port", "nosuch_1x1", "--arch", "all"]) == 2


def test_port_without_arch_is_unchanged(capsys):
    assert main(["port", "avx512_8x16", "--no-compile", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["plan"]["thread_tile"] == [8, 16] and "targets" not in rep
    assert main(["port", "avx512_8x16", "--mma", "f16", "--no-compile", "--json"]) == 0
    assert "banks" in json.loads(capsys.readouterr().out)
