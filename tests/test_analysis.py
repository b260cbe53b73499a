"""Tests for microkernel.analysis (`microkernel asm`): disassembly of the micro-kernel,
the inner-K-loop counts (FMAs, loads, broadcasts, spills) on x86-64 and aarch64,
llvm-mca parsing (x86 and aarch64 models), measured cycles on the timing engine, the
register-budget refusal and the CLI (microkernel.commands.asm).

Counting tests on real kernels compile them without importing them (x86: the kernel
module with compile_only; aarch64: the micro-kernel with the cross compiler), so the
avx512 ones run on any x86-64 host with a compiler and objdump, and the neon/sve ones
on any host with aarch64-linux-gnu-gcc and its objdump. Those are skipped without
the tools, unless MICROKERNEL_REQUIRE_CROSS=1 (then a missing tool fails)."""
import argparse
import json
import os
import platform
import shutil

import numpy as np
import pytest

from microkernel import analysis as mi
from microkernel.analysis import disasm, llvm_mca as mca_mod
from microkernel.commands import asm as asm_cmd
from microkernel.cross import ASM_APT_PACKAGES, CrossToolsMissing, find_asm_tools
from microkernel.tile import TileError, TileSpec, register_budget

IS_X86 = platform.machine().lower() in ("x86_64", "amd64")
HAS_OBJDUMP = shutil.which("objdump") is not None
HAS_MCA = mca_mod._llvm_mca() is not None
REQUIRE_CROSS = os.environ.get("MICROKERNEL_REQUIRE_CROSS", "") not in ("", "0")


def _a64_tools():
    try:
        return find_asm_tools()
    except CrossToolsMissing as exc:
        return exc


A64_TOOLS = _a64_tools()
needs_x86 = pytest.mark.skipif(not (IS_X86 and HAS_OBJDUMP),
                               reason="needs an x86-64 host with objdump")
needs_mca = pytest.mark.skipif(not HAS_MCA, reason="llvm-mca not installed")
needs_a64 = pytest.mark.skipif(
    isinstance(A64_TOOLS, Exception) and not REQUIRE_CROSS,
    reason=f"aarch64 compiler/objdump missing: apt-get install {' '.join(ASM_APT_PACKAGES)}")


def _usable():
    try:
        from microkernel.dispatch import usable_isas
        return usable_isas()
    except Exception:      # noqa: BLE001
        return ()


# -- synthetic listings: the parser and counters, no compiler needed ---------------------

# objdump -d --no-show-raw-insn -M intel style; a preamble, the K loop (2 k steps of a
# 2x16 avx512 tile: 1 B load + 2 embedded broadcasts per step), one spill and one reload,
# and a second (epilogue) loop with scalar FMAs that must not be chosen.
LISTING = """\
0000000000001000 <mk_ukernel_test>:
    1000:\tpush   rbp
    1001:\tmov    rbp,rsp
    1004:\tsub    rsp,0x40
    1008:\tmov    rax,QWORD PTR [rbp+0x10]
    1010:\tvmovups zmm2,ZMMWORD PTR [rcx]
    1016:\tvfmadd231ps zmm0,zmm2,DWORD BCST [rdx]
    101d:\tvfmadd231ps zmm1,zmm2,DWORD BCST [rdx+0x4]
    1024:\tvmovaps ZMMWORD PTR [rsp+0x40],zmm1
    102c:\tvmovups zmm2,ZMMWORD PTR [rcx+0x40]
    1033:\tvbroadcastss zmm3,DWORD PTR [rdx+0x8]
    1039:\tvfmadd231ps zmm0,zmm2,zmm3
    103f:\tvfmadd213ps zmm1,zmm2,ZMMWORD PTR [rbp-0x80]
    1046:\tadd    rdx,0x10
    104a:\tadd    rcx,0x80
    1051:\tsub    rdi,0x2
    1055:\tjne    1010 <mk_ukernel_test+0x10>
    1057:\tvmovss xmm4,DWORD PTR [r8]
    105c:\tvfmadd231ss xmm4,xmm5,DWORD PTR [r9]
    1062:\tvfmadd231ss xmm4,xmm5,DWORD PTR [r9+0x4]
    1068:\tvfmadd231ss xmm4,xmm5,DWORD PTR [r9+0x8]
    106e:\tvfmadd231ss xmm4,xmm5,DWORD PTR [r9+0xc]
    1074:\tvfmadd231ss xmm4,xmm5,DWORD PTR [r9+0x10]
    107a:\tvmovss DWORD PTR [r8],xmm4
    107f:\tdec    r10
    1082:\tjne    1057 <mk_ukernel_test+0x57>
    1084:\tvzeroupper
    1087:\tret
"""


def test_parse_listing():
    ins = mi.parse(LISTING)
    assert ins[0].address == 0x1000 and ins[0].mnemonic == "push"
    jne = [i for i in ins if i.mnemonic == "jne"]
    assert [j.branch_target for j in jne] == [0x1010, 0x1057]
    fma = next(i for i in ins if "BCST" in i.operands)
    (mem,) = fma.memory_operands()
    assert mem["broadcast"] and mem["base"] == "rdx" and mem["size"] == 4
    lea = mi.parse("    10:\tlea    rax,[rsp+0x8]\n")[0]
    assert lea.memory_operands() == []            # lea computes, never accesses memory


def test_inner_loop_counts_synthetic():
    loop = mi.inner_loop(LISTING, k_unroll=2)
    # the K loop (16-lane FMAs) wins over the epilogue loop with more scalar FMAs
    assert (loop.start, loop.end) == (0x1010, 0x1055)
    assert loop.fmas == 4 and loop.per_k("fmas") == 2
    assert loop.fma_lanes == 64 and loop.flops == 128
    assert loop.vector_loads == 2                  # the B loads; the rbp operand is a reload
    assert loop.folded_loads == 0                  # both are vmovups
    assert loop.broadcasts == 3 and loop.embedded_broadcasts == 2
    assert loop.stack_stores == 1 and loop.stack_loads == 1 and loop.spills == 2
    assert loop.frame_pointer                      # mov rbp,rsp: rbp-relative is stack
    assert loop.instructions_total == 12 and loop.per_k("instructions") == 6
    assert loop.vector_registers == ("zmm0", "zmm1", "zmm2", "zmm3")
    d = loop.to_dict()
    assert d["per_k"]["fmas"] == 2 and d["per_iteration"]["spills"] == 2
    json.dumps(d)


def test_rbp_is_not_stack_without_frame_pointer():
    # the same loop in a function that never set up rbp: [rbp-0x80] is data
    listing = "\n".join(l for l in LISTING.splitlines() if "mov    rbp,rsp" not in l)
    loop = mi.inner_loop(listing, k_unroll=2)
    assert not loop.frame_pointer
    assert loop.stack_loads == 0 and loop.stack_stores == 1
    assert loop.vector_loads == 3
    assert loop.folded_loads == 1                  # vfmadd213ps zmm1,zmm2,[rbp-0x80]


# A K loop split by the compiler: its second half sits after the function's return
# (GCC does this for rotated loops), and a backward `jmp` (0x80 -> 0x30) that is no loop.
SPLIT_LISTING = """\
0000000000000000 <f>:
       0:\tpush   rbp
       1:\tmov    rbp,rsp
       4:\tcmp    rdi,0x0
       8:\tjle    80 <f+0x80>
       e:\txor    esi,esi
      10:\tvbroadcastss ymm2,DWORD PTR [r12]
      16:\tvfmadd231ps ymm0,ymm2,YMMWORD PTR [rdx]
      1b:\tadd    rsi,0x1
      1f:\tcmp    rsi,rdi
      22:\tjl     60 <f+0x60>
      30:\tvmovups YMMWORD PTR [rcx],ymm0
      34:\tpop    rbp
      35:\tret
      60:\tvbroadcastss ymm3,DWORD PTR [r12+0x4]
      66:\tvfmadd231ps ymm1,ymm3,YMMWORD PTR [rdx+0x20]
      6b:\tvmovaps YMMWORD PTR [rsp-0x20],ymm1
      71:\tjmp    10 <f+0x10>
      80:\tvfmadd231ss xmm4,xmm5,DWORD PTR [r9]
      85:\tvfmadd231ss xmm6,xmm5,DWORD PTR [r9+0x4]
      8a:\tvfmadd231ss xmm7,xmm5,DWORD PTR [r9+0x8]
      8f:\tjmp    30 <f+0x30>
"""


def test_inner_loop_follows_control_flow():
    loop = mi.inner_loop(SPLIT_LISTING, k_unroll=2)
    assert [i.address for i in loop.instructions] == [
        0x10, 0x16, 0x1b, 0x1f, 0x22, 0x60, 0x66, 0x6b, 0x71]
    assert not loop.contiguous and "..." in loop.asm
    assert loop.fmas == 2 and loop.per_k("fmas") == 1
    assert loop.broadcasts == 2 and loop.vector_loads == 2 and loop.stack_stores == 1
    # the backward jmp 0x8f -> 0x30 closes no cycle: only one loop in the function
    assert len(mi.find_loops(mi.parse(SPLIT_LISTING))) == 1


def test_inner_loop_without_loop_raises():
    with pytest.raises(ValueError, match="no backward branch"):
        mi.inner_loop("    10:\tret\n")


def test_register_limit_refused_with_clear_message():
    # 16 x 32 avx512: 32 accumulators + 2 B vectors + 1 broadcast = 35 > 32 zmm
    with pytest.raises(TileError) as exc:
        TileSpec("avx512", 16, 32)
    msg = str(exc.value)
    assert "needs 35 vector registers" in msg and "avx512 has 32" in msg
    assert "spill" in msg
    with pytest.raises(TileError, match="needs 17 vector registers"):
        TileSpec.from_name("avx2_7x16")            # 14 + 2 + 1 > 16 ymm


# -- real kernels ------------------------------------------------------------------------

@needs_x86
def test_disassemble_only_the_micro_kernel():
    asm = mi.disassemble("avx512_8x16")
    assert asm.splitlines()[0].endswith("<mk_ukernel_avx512_8x16>:")
    assert "mk_gemm" not in asm and "mk_fma_peak" not in asm
    assert "zmm" in asm
    assert "PTR" in asm and "%" not in asm         # one syntax: Intel


@needs_x86
def test_avx512_8x16_eight_fmas_per_k_no_spills():
    loop = mi.loop_of("avx512_8x16")
    assert loop.k_unroll == 1
    assert loop.per_k("fmas") == 8
    assert loop.per_k("vector_loads") == 1         # one zmm row of B per k step
    assert loop.per_k("broadcasts") == 8           # one per row of A (embedded or not)
    assert loop.spills == 0 and mi.spills("avx512_8x16") == 0
    assert loop.flops == 2 * 8 * 16


@needs_x86
def test_avx2_6x16_twelve_fmas_per_k():
    loop = mi.loop_of("avx2_6x16")
    assert loop.per_k("fmas") == 12               # 6 rows x 2 ymm
    assert loop.per_k("vector_loads") == 2
    assert loop.per_k("broadcasts") == 6
    assert all(r.startswith("ymm") for r in loop.vector_registers)
    assert len(loop.vector_registers) <= 16


@needs_x86
def test_avx2_6x16_no_spills():
    # With k_unroll=4, GCC 12 -O3 spilled one ymm accumulator here (15 of 16 ymm);
    # that is why the default unroll is 1.
    assert mi.spills("avx2_6x16") == 0


@needs_x86
@pytest.mark.parametrize("name", ["avx2_6x16_u2", "avx512_12x32", "avx512_14x32",
                                  "avx512_8x32_u4"])
def test_no_spills_with_smaller_unroll(name):
    loop = mi.loop_of(name)
    spec = TileSpec.from_name(name)
    assert loop.per_k("fmas") == spec.mr * spec.nr / spec.info.lanes
    assert loop.spills == 0


@needs_x86
def test_tile_near_register_limit_counts():
    spec = TileSpec.from_name("avx512_14x32")
    b = register_budget(spec)
    assert (b.accumulators, b.needed, b.available) == (28, 31, 32) and b.near_limit
    loop = mi.loop_of(spec)
    assert loop.per_k("fmas") == spec.mr * spec.nr / 16 == 28
    assert loop.per_k("vector_loads") == 2
    assert loop.per_k("broadcasts") == 14
    assert loop.spills >= 0 and loop.spills == mi.spills(spec)
    assert len(loop.vector_registers) <= 32


@needs_x86
def test_scalar_tile_counts_mul_add_or_fma():
    spec = TileSpec.from_name("scalar_4x4")
    loop = mi.loop_of(spec)
    assert loop.fmas + loop.muls > 0 and loop.fmas + loop.adds > 0
    # all of the tile's work is in the loop (packed ops may be partly used: >=)
    assert loop.flops / spec.k_unroll >= 2 * spec.mr * spec.nr
    assert not any(r.startswith(("ymm", "zmm")) for r in loop.vector_registers)
    # 16 accumulators + 4 B + 1 A > 16 xmm as scalars; at k_unroll=1 GCC packs the tile
    # into SSE vectors (movups/mulps) and keeps it in registers anyway
    assert register_budget(spec).needed > 16


def test_x86_isa_on_a_non_x86_host_is_refused(monkeypatch):
    monkeypatch.setattr(disasm, "host_arch", lambda: "aarch64")
    with pytest.raises(NotImplementedError, match="x86-64"):
        mi.disassemble("avx2_6x16")


# -- llvm-mca ------------------------------------------------------------------------------

FMA_BOUND_LISTING = "".join(
    f"    {0x10 + 6 * i:x}:\tvfmadd231ps ymm{i},ymm12,ymm13\n" for i in range(12)
) + "    58:\tdec    rdi\n    5b:\tjne    10 <f+0x10>\n"


@needs_mca
def test_mca_fma_bound_loop():
    info = mi.mca(FMA_BOUND_LISTING, "haswell", k_unroll=1, fma_units=2)
    assert info is not None and info.mcpu == "haswell"
    assert info.cycles_per_iteration == pytest.approx(6.0, rel=0.05)
    assert info.block_rthroughput == pytest.approx(6.0, rel=0.05)
    assert info.bottleneck == "FMA throughput"
    assert any(v > 0 for v in info.resource_pressure.values())
    json.dumps(info.to_dict())


@needs_mca
@needs_x86
def test_mca_avx512_8x16_load_port_bound():
    info = mi.mca(mi.loop_of("avx512_8x16_u4"), "skylake-avx512")
    assert info.k_unroll == 4
    # 4 B loads + 32 embedded broadcasts = 36 loads over 2 load ports: 18 cycles per
    # 4 k steps, above the FMA bound of 32 / 2 = 16
    assert info.rthroughput_per_k == pytest.approx(4.5, abs=0.3)
    assert info.fma_bound == 16
    assert "load port" in info.resource_bound_by
    assert info.cycles_per_k >= info.rthroughput_per_k * 0.95


@needs_mca
@needs_x86
def test_mca_avx2_6x16_near_fma_bound():
    mcpu, _note = mi.checked_mcpu("avx2")
    info = mi.mca(mi.loop_of("avx2_6x16"), mcpu)
    assert info.fma_bound / info.k_unroll == 6
    assert 5.5 <= info.cycles_per_k <= 13


@needs_mca
def test_checked_mcpu_replaces_a_model_with_half_the_fma_units(monkeypatch):
    assert mi.mca_fma_rate("haswell", "avx2") == pytest.approx(2.0, rel=0.05)
    assert mi.checked_mcpu("avx2", "haswell") == ("haswell", "")
    if "znver3" not in mca_mod._mca_cpus(mca_mod._llvm_mca()) or mi.mca_fma_rate("znver3") > 1.9:
        pytest.skip("this llvm-mca's znver3 model runs 2 ymm FMAs per cycle")
    # LLVM <= 15 (llvm/llvm-project#59325): 1 FMA/cycle, half of Zen 3's two FMA pipes
    monkeypatch.setattr(mca_mod, "default_mcpu", lambda isa, cpu_info=None: "znver3")
    mcpu, note = mi.checked_mcpu("avx2")
    assert mcpu == "znver2" and "59325" in note
    kept, note = mi.checked_mcpu("avx2", "znver3")   # an explicit --mcpu is kept
    assert kept == "znver3" and "kept" in note


def test_mca_source_converts_embedded_broadcast():
    src = mca_mod._mca_source(mi.inner_loop(LISTING, 2))
    assert "DWORD PTR [rdx]{1to16}" in src and "BCST" not in src
    assert src.splitlines()[0] == ".intel_syntax noprefix"
    assert "jne .Lmk_loop" in src


def test_mca_missing_returns_none(monkeypatch):
    monkeypatch.setattr(mca_mod, "_llvm_mca", lambda: None)
    assert mi.mca(FMA_BOUND_LISTING, "haswell") is None


# -- measured cycles, report and CLI -------------------------------------------------------

@pytest.mark.skipif("avx2" not in _usable(), reason="avx2 not runnable here")
def test_measured_cycles_avx2():
    m = mi.measure("avx2_6x16", rounds=3)
    assert m.kernel_gflops > 0 and m.peak_gflops > 0
    # the derivation, not the speed (speed is never asserted in a test): the peak and
    # the kernel are timed in the same rounds and each figure is the median over them;
    # the clock is peak / (2 flops x 8 lanes x 2 FMA units), and a k step of 12 FMAs
    # (2 * 6 * 16 flops) takes (2*6*16 / 32) x peak_r / kernel_r cycles in round r
    peak_r, kern_r = np.array(m.peak_rounds), np.array(m.kernel_rounds)
    assert len(peak_r) == len(kern_r) == m.rounds == 3
    assert m.peak_gflops == pytest.approx(np.median(peak_r), rel=1e-9)
    assert m.kernel_gflops == pytest.approx(np.median(kern_r), rel=1e-9)
    assert m.ghz == pytest.approx(m.peak_gflops / 32, rel=1e-9)
    assert m.cycles_per_k == pytest.approx(2 * 6 * 16 / 32 * np.median(peak_r / kern_r),
                                           rel=1e-9)
    assert m.cycles_per_k_interval[0] <= m.cycles_per_k <= m.cycles_per_k_interval[1]
    assert m.kernel_gflops_interval[0] <= m.kernel_gflops <= m.kernel_gflops_interval[1]
    d = m.to_dict()           # the JSON report keeps the flat _lo/_hi keys
    assert (d["cycles_per_k_lo"], d["cycles_per_k_hi"]) == m.cycles_per_k_interval
    assert m.fraction_of_peak == pytest.approx(np.median(kern_r / peak_r), rel=1e-9)
    assert m.method.startswith("measured (derived from the FMA peak)")


@needs_x86
def test_report_not_runnable_avx512(monkeypatch):
    why = "not runnable here: avx512 not supported by this CPU"
    if "avx512" in _usable():     # narrow dispatch so that avx512 cannot run here either
        monkeypatch.setenv("MICROKERNEL_ISA", "avx2")
        why += " or outside MICROKERNEL_ISA=avx2"
    rep = mi.report("avx512_8x16")
    assert rep["measured"] == {"runnable": False, "reason": why}
    assert rep["measured_cycles_per_k"] is None
    assert rep["fmas_per_k"] == 8 and rep["spills"] == 0
    assert rep["register_budget"]["needed"] == 10


@needs_x86
def test_report_notes_loads_folded_into_fmas():
    """Where the compiler folds B loads into FMAs beyond the expected loads per k step
    (avx2_4x24_u8: 12 accumulators, 3 B vectors and a broadcast fill the 16 ymm), the
    report says how many and that they are not spills."""
    rep = mi.report("avx2_4x24_u8", measure=False)
    per_k, per_iter = rep["loop"]["per_k"], rep["loop"]["per_iteration"]
    notes = [n for n in rep["notes"] if n.startswith("vector loads:")]
    if per_k["vector_loads"] > rep["expected"]["b_loads_per_k"] and per_iter["folded_loads"]:
        assert len(notes) == 1
        assert f"{per_iter['folded_loads']} of the {per_iter['vector_loads']}" in notes[0]
    else:
        assert notes == []
    rep = mi.report("avx2_6x16", measure=False)       # 3 loads per k step, none folded
    assert not [n for n in rep["notes"] if n.startswith("vector loads:")]


@needs_x86
def test_report_counts_vpmaddwds_product_register():
    """x86 integer tiles: 8 accumulators + 2 B + a broadcast + vpmaddwd's product = 12
    live ymm registers for avx2_s8s8_4x16 (the budget counts the product, so a 4x24
    that would need 17 is refused before any code is generated); the note says so."""
    rep = mi.report("avx2_s8s8_4x16", measure=False)
    (note,) = [n for n in rep["notes"] if "vpmaddwd has no fused accumulate" in n]
    assert "12 live registers of 16" in note and rep["register_budget"]["needed"] == 12
    assert rep["loop"]["per_iteration"]["spills"] == 0 and "spills" not in note
    assert not [n for n in mi.report("avx2_6x16", measure=False)["notes"] if "vpmaddwd" in n]


def _args(*argv):
    p = argparse.ArgumentParser()
    asm_cmd.add_arguments(p)
    return p.parse_args(list(argv))


@pytest.mark.skipif(not HAS_MCA, reason="llvm-mca not installed")
def test_run_asm_unknown_mcpu_is_refused_before_any_build(capsys, monkeypatch):
    from microkernel.analysis import reporting
    monkeypatch.setattr(reporting, "disassemble",
                        lambda *a, **k: pytest.fail("built before checking --mcpu"))
    assert asm_cmd.run(_args("avx2_4x24_u8", "--mcpu", "znver", "--no-measure")) == 2
    err = capsys.readouterr().err
    assert "microkernel asm: error: --mcpu 'znver'" in err and "znver2" in err
    assert len(err.splitlines()) == 1


@needs_x86
def test_run_asm_json(capsys):
    assert asm_cmd.run(_args("avx512_8x16", "--json", "--no-measure")) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["loop"]["per_k"]["fmas"] == 8
    assert rep["loop"]["per_k"]["spills"] == 0
    assert rep["syntax"] == "intel" and "function" not in rep
    if HAS_MCA:
        assert rep["mca"]["mcpu"] in ("sapphirerapids", "icelake-server", "skylake-avx512")
        assert rep["predicted_cycles_per_k"] > 0


@needs_x86
def test_run_asm_text_and_full(capsys):
    assert asm_cmd.run(_args("avx512_8x16", "--full", "--no-measure",
                            "--mcpu", "skylake-avx512")) == 0
    out = capsys.readouterr().out
    assert "vfmadd231ps" in out and "mk_ukernel_avx512_8x16" in out
    assert "FMAs" in out and "register budget" in out
    assert "ret" in out                            # --full: the whole function
    if HAS_MCA:
        assert "-mcpu=skylake-avx512" in out


def test_run_asm_bad_name(capsys):
    assert asm_cmd.run(_args("avx512_16x32")) == 2
    assert "needs 35 vector registers" in capsys.readouterr().err


# -- aarch64: synthetic listings (no tools needed) -----------------------------------------

# objdump -d --no-show-raw-insn style for aarch64: a frame pointer (mov x29, sp), a K loop
# 0x10..0x30 with a load pair of two q registers, a by-element and a vector FMA, an ld1r
# broadcast, a lane-sized scalar load, one spill to the stack; a prefetch and a reload
# outside the loop; objdump's "// b.any" comment.
A64_LISTING = """\
0000000000000000 <mk_ukernel_t>:
   0:\tstp\tx29, x30, [sp, #-32]!
   4:\tmov\tx29, sp
   8:\tcbz\tx0, 40 <mk_ukernel_t+0x40>
   c:\tprfm\tpldl1keep, [x5]
  10:\tldp\tq1, q0, [x2]
  14:\tldr\tq2, [x3, #32]
  18:\tld1r\t{v3.4s}, [x4]
  1c:\tfmla\tv12.4s, v2.4s, v1.s[0]
  20:\tfmla\tv13.4s, v2.4s, v3.4s
  24:\tstr\tq13, [sp, #16]
  28:\tldr\ts4, [x2, #28]
  2c:\tsubs\tx0, x0, #0x1
  30:\tb.ne\t10 <mk_ukernel_t+0x10>  // b.any
  34:\tldr\tq5, [x29, #16]
  38:\tst1\t{v12.4s, v13.4s}, [x6]
  3c:\tldp\tx29, x30, [sp], #32
  40:\tret
"""

# SVE: predicated FMAs, ld1w vector loads (one with a mul vl offset), an ld1rw broadcast,
# a spill and a reload of whole scalable registers
A64_SVE_LISTING = """\
0000000000000000 <f>:
   0:\tptrue\tp0.s
   4:\tld1w\t{z1.s}, p0/z, [x3]
   8:\tld1w\t{z0.s}, p0/z, [x3, #1, mul vl]
   c:\tld1rw\t{z3.s}, p0/z, [x2]
  10:\tfmla\tz5.s, p0/m, z1.s, z3.s
  14:\tfmla\tz6.s, p0/m, z0.s, z3.s
  18:\tstr\tz5, [sp, #1, mul vl]
  1c:\tldr\tz7, [sp, #2, mul vl]
  20:\tadd\tx3, x3, x9
  24:\tcmp\tx0, x8
  28:\tb.ne\t4 <f+0x4>
  2c:\tret
"""


def test_parse_a64_listing():
    ins = mi.parse(A64_LISTING, "aarch64")
    assert [i.address for i in ins][:3] == [0x0, 0x4, 0x8]
    assert all(i.arch == "aarch64" for i in ins)
    cbz = ins[2]
    assert cbz.mnemonic == "cbz" and cbz.branch_target == 0x40 and not cbz.is_unconditional
    bne = next(i for i in ins if i.mnemonic == "b.ne")
    assert bne.branch_target == 0x10 and "//" not in bne.text and "b.any" not in bne.operands
    assert ins[-1].mnemonic == "ret" and ins[-1].is_unconditional
    tbz = mi.parse("  20:\ttbz\tw1, #3, 1d0 <f+0x1d0>\n", "aarch64")[0]
    assert tbz.branch_target == 0x1d0
    fma = next(i for i in ins if i.operands.endswith("v1.s[0]"))
    assert fma.vector_registers() == ["v12", "v2", "v1"]
    # a branch target such as "b0" is an address, not register b0
    assert mi.parse("  20:\tb.ne\tb0 <f+0xb0>\n", "aarch64")[0].vector_registers() == []


def test_a64_loop_counts_synthetic():
    loop = mi.inner_loop(A64_LISTING, k_unroll=1, arch="aarch64")
    assert (loop.start, loop.end) == (0x10, 0x30) and loop.arch == "aarch64"
    assert loop.fmas == 2 and loop.fma_by_element == 1 and loop.fma_predicated == 0
    assert loop.fma_lanes == 8 and loop.flops == 16 and not loop.scalable
    assert loop.vector_loads == 3            # ldp q1, q0 (two registers) + ldr q2
    assert loop.broadcasts == 1              # ld1r
    assert loop.scalar_loads == 1            # ldr s4
    assert loop.stack_stores == 1 and loop.stack_loads == 0 and loop.spills == 1
    assert loop.frame_pointer and loop.stack_bases == ("sp", "x29")
    assert loop.instructions_total == 9
    assert loop.vector_registers == ("v0", "v1", "v2", "v3", "v4", "v12", "v13")
    d = loop.to_dict()
    assert d["per_iteration"]["spills"] == 1 and d["arch"] == "aarch64"
    json.dumps(d)


def test_a64_sve_loop_counts_in_vectors():
    loop = mi.inner_loop(A64_SVE_LISTING, k_unroll=1, arch="aarch64")
    assert (loop.start, loop.end) == (0x4, 0x28)
    assert loop.fmas == 2 and loop.fma_predicated == 2 and loop.fma_by_element == 0
    assert loop.scalable and loop.fma_lanes == 2 and loop.flops == 4   # in vectors
    assert loop.vector_loads == 2 and loop.broadcasts == 1
    assert loop.stack_stores == 1 and loop.stack_loads == 1
    assert not loop.frame_pointer
    assert loop.vector_registers == ("z0", "z1", "z3", "z5", "z6", "z7")
    assert "vectors" in loop.to_dict()["lane_unit"]


def test_a64_mca_source_labels_and_comments():
    src = mca_mod._mca_source(mi.inner_loop(A64_LISTING, 1, "aarch64"))
    lines = src.splitlines()
    assert lines[0] == ".Lmk_loop:" and lines[-1] == ".Lmk_exit:"
    assert "    b.ne .Lmk_loop" in lines
    assert "//" not in src and "<" not in src and ".intel_syntax" not in src
    cbz = mca_mod._mca_source("  10:\tcbz\tx0, 40 <f+0x40>\n", "aarch64")
    assert "cbz x0, .Lmk_exit" in cbz


def test_default_aarch64_mcpu_is_neoverse_v2_when_known(monkeypatch):
    monkeypatch.setattr(mca_mod, "_llvm_mca", lambda: "llvm-mca")
    monkeypatch.setattr(mca_mod, "_mca_cpus", lambda exe, triple=None: frozenset(
        {"neoverse-v2", "neoverse-n1", "apple-m1"}))
    assert mca_mod.default_mcpu("neon") == "neoverse-v2"
    assert mca_mod.default_mcpu("sve") == "neoverse-v2"
    monkeypatch.setattr(mca_mod, "_mca_cpus", lambda exe, triple=None: frozenset(
        {"neoverse-n1", "apple-m1"}))
    assert mca_mod.default_mcpu("neon") == "neoverse-n1"


# -- aarch64: real kernels through the cross compiler ---------------------------------------

@needs_a64
def test_disassemble_neon_only_the_micro_kernel():
    asm = mi.disassemble("neon_8x12")
    assert asm.splitlines()[0].endswith("<mk_ukernel_neon_8x12>:")
    assert "fmla" in asm and "zmm" not in asm and "PTR" not in asm
    assert mi.object_path("neon_8x12").suffix == ".o"


@needs_a64
def test_neon_8x12_loop_24_fmla_no_spills():
    loop = mi.loop_of("neon_8x12")
    assert loop.arch == "aarch64" and loop.k_unroll == 1
    assert loop.fmas == 24 and loop.per_k("fmas") == 24
    assert loop.fma_by_element == 24               # vfmaq_laneq_f32: A from a lane
    assert loop.fma_lanes == 96 and loop.flops == 2 * 8 * 12
    assert loop.vector_loads == 5                  # 3 B vectors + 2 A vectors (MR = 8)
    assert loop.broadcasts == 0
    assert loop.spills == 0 and mi.spills("neon_8x12") == 0
    assert all(r.startswith("v") for r in loop.vector_registers)
    assert len(loop.vector_registers) <= 32


@needs_a64
def test_sve_8x2v_loop_16_fmla_no_spills():
    loop = mi.loop_of("sve_8x2v")
    assert loop.fmas == 16 and loop.fma_predicated == 16 and loop.scalable
    assert loop.vector_loads == 2                  # B: 2 vectors of VL bits
    assert loop.broadcasts == 8                    # one ld1rw per row of A
    assert loop.spills == 0 and mi.spills("sve_8x2v") == 0
    assert all(r.startswith("z") for r in loop.vector_registers)


@needs_a64
def test_spilling_tiles_show_spills_on_aarch64():
    # neon_14x8: 28 accumulators + 2 B vectors + 4 A registers (q, q, q, d) = 34 > 32
    # in the by-element form (the register budget counts one broadcast: 31 of 32)
    loop = mi.loop_of("neon_14x8")
    assert loop.spills > 0
    assert loop.spills == loop.stack_loads + loop.stack_stores
    assert any("[sp" in line or "[x29" in line for line in loop.asm.splitlines())
    # the shared broadcast skeleton on neon_8x12 (the form codegen.arm avoids because
    # it spills, see its docstring), as a user source
    from microkernel.codegen import arm, common
    spec = TileSpec.from_name("neon_8x12")
    src = common.emit_ukernel(spec, arm.NEON, includes=("arm_neon.h",))
    spilled = mi.loop_of(spec, source=src)
    assert spilled.spills > 0 and spilled.fmas == 24


@needs_a64
@needs_mca
def test_mca_aarch64_cycles_parse():
    # 24 independent by-element FMAs: two 128-bit FMA pipes need 12 cycles; a model
    # that runs them at another rate is replaced (checked_mcpu) and says so
    listing = "".join(f"  {0x10 + 4 * i:x}:\tfmla\tv{i}.4s, v30.4s, v31.s[1]\n"
                      for i in range(24)) + "  70:\tsubs\tx0, x0, #0x1\n  74:\tb.ne\t10 <f+0x10>\n"
    mcpu, note = mi.checked_mcpu("neon")
    info = mi.mca(listing, mcpu, k_unroll=1, fma_units=2, arch="aarch64")
    assert info.triple == "aarch64-linux-gnu" and info.mcpu == mcpu
    assert info.cycles_per_iteration == pytest.approx(12.0, rel=0.05), note
    assert info.bottleneck == "FMA throughput"
    assert any(v > 0 for v in info.resource_pressure.values())
    json.dumps(info.to_dict())
    # the real kernels, SVE through -mattr=+sve
    rep = mi.report("neon_8x12", measure=False)
    assert rep["mca"]["cycles_per_k"] >= 0.95 * 24 / 2
    assert rep["predicted_cycles_per_k"] == rep["mca"]["cycles_per_k"]
    rep = mi.report("sve_8x2v", measure=False)
    assert rep["mca"] is not None, rep.get("mca_error")
    assert rep["mca"]["cycles_per_k"] >= 0.95 * 16 / 2
    assert rep["mca"]["mcpu"] in mca_mod.A64_MCPUS["sve"]


@needs_a64
def test_report_aarch64_not_runnable_and_vector_units():
    rep = mi.report("sve_8x2v")
    assert rep["arch"] == "aarch64" and rep["syntax"] == "a64"
    if not IS_X86:
        pytest.skip("measured on an aarch64 host")
    assert rep["measured"] == {"runnable": False,
                               "reason": "not runnable here: sve not supported by this CPU"}
    assert rep["spills"] == 0 and rep["fmas_per_k"] == 16
    assert rep["expected"]["fmas_per_k"] == 16 and rep["expected"]["lanes"] is None
    assert rep["loop"]["scalable"] and any("vectors" in n for n in rep["notes"])
    assert rep["k_steps_per_iteration"] is None


@needs_a64
def test_run_asm_neon_json(capsys):
    assert asm_cmd.run(_args("neon_8x12", "--json", "--no-measure")) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["name"] == "neon_8x12" and rep["syntax"] == "a64"
    assert rep["loop"]["per_k"]["fmas"] == 24 and rep["loop"]["per_k"]["spills"] == 0
    assert rep["expected"]["vector_loads_per_k"] == 5
    if HAS_MCA:
        assert rep["mca"]["triple"] == "aarch64-linux-gnu"


@needs_a64
def test_run_asm_sve_text(capsys):
    assert asm_cmd.run(_args("sve_8x2v", "--no-measure")) == 0
    out = capsys.readouterr().out
    assert "mk_ukernel_sve_8x2v" in out and "ld1rw" in out and "fmla" in out
    assert "a64 syntax" in out and "vectors" in out


def test_run_asm_aarch64_tools_missing(monkeypatch, capsys):
    monkeypatch.setenv("MICROKERNEL_CROSS_CC", "no-such-aarch64-gcc-xyz")
    assert asm_cmd.run(_args("neon_8x12", "--no-measure")) == 2
    err = capsys.readouterr().err
    assert "no-such-aarch64-gcc-xyz" in err
    assert "gcc-aarch64-linux-gnu" in err and "binutils-aarch64-linux-gnu" in err


@needs_a64
@needs_mca
@pytest.mark.parametrize("isa,mrs,nrs,default", [("neon", [8], [12, 16], "neon_8x12"),
                                                 ("sve", [8], [2], "sve_8x2v")])
def test_sweep_predicted_aarch64(isa, mrs, nrs, default):
    from microkernel.sweep import predicted
    res = predicted(isa, mrs=mrs, nrs=nrs)
    assert res["predicted"] and res["mcpu"]
    rows = {r["name"]: r for r in res["rows"]}
    assert default in rows and rows[default]["spills"] == 0
    assert all(r["predicted_cycles_per_k"] for r in res["rows"]), res["rows"]


@needs_a64
def test_run_asm_source_compile_error_names_the_users_file(tmp_path, capsys):
    bad = tmp_path / "my_neon.c"
    bad.write_text("#include <stdint.h>\n"
                   "void mk_ukernel_neon_8x12(int64_t kc, const float *alpha, const float *a,\n"
                   "    const float *b, const float *beta, float *c, int64_t rs_c, int64_t cs_c)\n"
                   "{\n    this is not C;\n}\n")
    assert asm_cmd.run(_args("neon_8x12", "--no-measure", "--source", str(bad))) == 2
    err = capsys.readouterr().err
    assert f"{bad}:5:" in err                      # the user's file and line


@needs_a64
def test_run_asm_source_is_read(tmp_path, capsys):
    from microkernel import codegen
    src = tmp_path / "mine.c"
    src.write_text(codegen.generate(TileSpec.from_name("sve_8x2v")))
    assert asm_cmd.run(_args("sve_8x2v", "--no-measure", "--json", "--source", str(src))) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["source"] == str(src) and rep["loop"]["per_k"]["fmas"] == 16


@needs_mca
def test_sweep_predicted_scalar_has_no_fma_use_above_the_peak():
    """Scalar C on x86-64 compiles to SSE multiplies and adds (no FMA instruction, 4
    lanes): a scalar FMA peak does not describe it, so no FMA use is given (it read
    123% before), and the rows are ranked by predicted flops per cycle. An AVX2 tile's
    code holds the model's FMAs: its use is given, and below 100%."""
    from microkernel.sweep import predicted
    res = predicted("scalar", mrs=[4, 8], nrs=[2, 4])
    assert all(r["predicted_utilisation"] is None for r in res["rows"]), res["rows"]
    fpc = [r["predicted_flops_per_cycle"] for r in res["rows"] if not r["spills"]]
    assert fpc == sorted(fpc, reverse=True) and all(x > 0 for x in fpc)
    assert any("FMA use not given" in n for n in res["notes"])
    res = predicted("avx2", mrs=[4], nrs=[24])
    row = next(r for r in res["rows"] if r["name"] == "avx2_4x24")
    assert row["fmas_in_code"] == row["fmas_per_k"] == 12
    assert 0.5 < row["predicted_utilisation"] <= 1.0
    assert row["predicted_flops_per_cycle"] == pytest.approx(
        192 / row["predicted_cycles_per_k"])
    assert not any("FMA use not given" in n for n in res["notes"])


@needs_mca
def test_sweep_predicted_says_what_it_cannot_predict():
    """Scalar integer C compiles to SSE integer code that the counts do not know: no row
    is ranked on a flop count of 0 (scalar_s8s8_32x8 led with '63.9 flops/cycle' of a
    loop that held no multiply), the sweep says why. AMX: llvm-mca has no TMUL timings,
    and the sweep's notes say so beside its figures."""
    from microkernel.sweep import SweepError, predicted
    with pytest.raises(SweepError, match="SSE integer code"):
        predicted("scalar", mrs=[4, 8], nrs=[4, 8], types="s8s8")
    res = predicted("amx", mrs=[32], nrs=[32])
    assert any("no TMUL timings" in n for n in res["notes"]), res["notes"]
