"""The Arm typed tiles under qemu beyond the default ``microkernel cross`` run
(tests/test_cross.py): user shapes, a broken kernel that the harness must catch, the
SME integer tiles on an emulator with qemu's 32-bit SMOPA defect, the peak loops'
flop counts, and ``microkernel asm`` on the typed loops (spills, counts, llvm-mca).

Needs the cross tools (skipped with the apt packages named, unless
MICROKERNEL_REQUIRE_CROSS=1). Runtime: about 40 s on 2 cores."""
import subprocess

import pytest

from microkernel import analysis, codegen, cross
from microkernel.codegen import arm_mmla
from microkernel.tile import TileSpec

try:
    TOOLS = cross.find_tools()
except cross.CrossToolsMissing as exc:      # pragma: no cover - CI has them
    TOOLS = exc
needs_tools = pytest.mark.skipif(
    isinstance(TOOLS, Exception),
    reason=f"aarch64 cross tools missing: apt-get install {' '.join(cross.APT_PACKAGES)}")

#: odd shapes: the dot product's q/d/s A groups, fp16 rows of 8/4/1, SVE mmla at 1 vector,
#: unrolls, SME tiles of 1, 2 and 4 ZA tiles
USER_TILES = ["neondot_s8s8_7x8_u2", "neondot_u8u8_1x4", "neonfp16_13x16_u2", "neonfp16_f16_5x8",
              "neoni8mm_u8s8_6x12_u3", "neonbf16_2x4", "svei8mm_s8s8_2x1v_u2", "svebf16_4x3v",
              "sme_1x1v", "sme_f16_1x4v_u2", "sme_bf16_4x1v"]


@needs_tools
def test_user_typed_tiles_cross():
    rep = cross.cross_validate(USER_TILES, vls=(128, 1024), quick=True, timeout=600)
    for r in rep.runs:
        assert r.ok, (r.label, r.errors, {n: k.failures[:3] for n, k in r.kernels.items()
                                          if k.failures})
    assert all(v["identical"] for v in rep.identity.values()) and len(rep.identity) == 3


@needs_tools
def test_a_broken_typed_kernel_is_caught(monkeypatch):
    """Negative control: the SMMLA emitter with its row un-interleaving swapped (rows 2p
    and 2p+1 exchanged) must fail bit-exactness on every executed case with M > 1, and
    its cases still be refused where I8MM is missing."""
    real = arm_mmla._neon_ukernel
    monkeypatch.setattr(arm_mmla, "_neon_ukernel", lambda spec: real(spec).replace(
        "vzip1q_s64", "MK_TMP").replace("vzip2q_s64", "vzip1q_s64").replace("MK_TMP", "vzip2q_s64"))
    rep = cross.cross_validate(["neoni8mm_s8s8_8x8"], vls=(128,), refusal=False, quick=True,
                               timeout=300)
    k = {r.label: r.kernels["neoni8mm_s8s8_8x8"] for r in rep.runs}
    assert not rep.ok and k["sve-128"].failures and k["sve-128"].passed < k["sve-128"].cases
    assert any("max error" in f.get("detail", "") for f in k["sve-128"].failures)
    assert k["neon-only"].refused > 0 and not k["neon-only"].failures


@needs_tools
def test_sme_integer_tiles_are_never_counted_as_proven_on_a_wrong_smopa():
    """The harness's known answer of the 32-bit SMOPA decides: on qemu 7.2 (its defect)
    the integer SME tiles execute but stay unproven, the run fails and says why; on an
    emulator that gets SMOPA right they must pass bit-exactly."""
    rep = cross.cross_validate(["sme_s8s8_2x2v", "sme_u8s8_1x2v"], vls=(256,), neon_cpu=None,
                               refusal=False, quick=True, timeout=300)
    (run,) = rep.runs
    if rep.emulator_defects:
        assert "SMOPA" in rep.emulator_defects[0] and not rep.ok
        assert all(k.unproven > 0 and k.passed == 0 for k in run.kernels.values())
    else:
        assert rep.ok and all(k.passed == k.cases > 0 for k in run.kernels.values())


#: (isa, types, qemu -cpu, flops per iteration): 24 chains x 2 x multiply-adds per
#: instruction (16 per SDOT/USDOT, 32 per SMMLA, 16 per BFMMLA, 8 per fp16 FMLA, 4 per FMLAL;
#: SVE per 128-bit segment; SME: 16 outer products of (SVL/32)^2 x K group)
_PEAKS = [("neondot", "s8s8", "cortex-a76", 768), ("neondot", "u8s8", "max", 768),
          ("neoni8mm", "s8s8", "max", 1536), ("neonbf16", "bf16", "max", 768),
          ("neonfp16", "f16h", "cortex-a76", 384), ("neonfp16", "f16", "max", 192),
          ("svei8mm", "u8u8", "max,sve-default-vector-length=32", 3072),
          ("svebf16", "bf16", "max,sve-default-vector-length=64", 3072),
          ("sme", "f32", "max,sme-default-vector-length=32,sme_fa64=off", 2048),
          ("sme", "bf16", "max,sme-default-vector-length=16,sme_fa64=off", 1024)]
_PEAK_FLAGS = {"neondot": "-march=armv8.2-a+dotprod+i8mm", "neoni8mm": "-march=armv8.2-a+i8mm",
               "neonbf16": "-march=armv8.2-a+bf16", "neonfp16": "-march=armv8.2-a+fp16+fp16fml",
               "svei8mm": "-march=armv8.2-a+sve+i8mm", "svebf16": "-march=armv8.2-a+sve+bf16",
               "sme": "-march=armv8-a"}


@needs_tools
@pytest.mark.parametrize("isa,types,cpu,flops", _PEAKS, ids=[f"{i}-{t}" for i, t, _, _ in _PEAKS])
def test_typed_peak_loops_count_their_flops(isa, types, cpu, flops, tmp_path):
    """Not a timing: each peak loop runs on an emulated CPU that has its instruction and
    counts its flops at the run-time VL."""
    main = ('#include <stdio.h>\n#include <stdint.h>\ndouble mk_fma_peak(int64_t, double *);\n'
            'int main(void) { double f = 0; mk_fma_peak(1000, &f); printf("%.0f\\n", f); '
            'return 0; }\n')
    (tmp_path / "peak.c").write_text(codegen.generate_peak(isa, types))
    (tmp_path / "main.c").write_text(main)
    subprocess.run([TOOLS.cc, "-O2", "-Wall", "-Werror", _PEAK_FLAGS[isa], "-c",
                    str(tmp_path / "peak.c"), "-o", str(tmp_path / "peak.o")], check=True)
    exe = tmp_path / "peak"
    subprocess.run([TOOLS.cc, "-static", "-O2", str(tmp_path / "main.c"), str(tmp_path / "peak.o"),
                    "-o", str(exe)], check=True)
    out = subprocess.run([TOOLS.qemu, "-cpu", cpu, str(exe)], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert float(out) == flops * 1000


@needs_tools
@pytest.mark.parametrize("name", ["neondot_s8s8_8x12", "neondot_u8s8_8x12", "neoni8mm_s8s8_8x8",
                                  "neonbf16_8x8", "neonfp16_8x24", "neonfp16_f16_8x8",
                                  "svei8mm_s8s8_8x2v", "svebf16_8x2v", "sme_2x2v", "sme_bf16_2x2v"])
def test_typed_inner_loops_do_not_spill_and_count_their_instructions(name):
    """As `microkernel asm` builds them (-O3): no stack traffic in the K loop, one typed
    multiply-add per accumulator (SME: per ZA tile) per K group, and the report's
    expectations match what the loop does."""
    spec = TileSpec.from_name(name)
    rep = analysis.report(spec, measure=False)
    loop = rep["loop"]["per_k"]
    assert rep["spills"] == 0, rep["loop"]["asm"]
    assert loop["fmas"] == rep["expected"]["fmas_per_k"] == rep["register_budget"]["accumulators"]
    assert loop["flops"] == rep["expected"]["flops_per_k"]
    if rep["expected"].get("fma_by_element_per_k"):
        assert loop["fma_by_element"] == rep["expected"]["fma_by_element_per_k"]


@needs_tools
def test_asm_llvm_mca_on_typed_loops():
    """llvm-mca (where installed) predicts the NEON typed loops; LLVM 14 has no model of
    SVE SMMLA or the SME outer products, and the report says so instead of a number."""
    from microkernel.analysis import llvm_mca
    if llvm_mca._llvm_mca() is None:
        pytest.skip("llvm-mca not installed")
    for name in ("neondot_s8s8_8x12", "neoni8mm_s8s8_8x8", "neonbf16_8x8", "neonfp16_8x24"):
        rep = analysis.report(name, measure=False)
        assert rep["mca"] and rep["predicted_cycles_per_k"] > 0, (name, rep.get("mca_error"))
    for name in ("svei8mm_s8s8_8x2v", "sme_2x2v"):
        rep = analysis.report(name, measure=False)
        if rep.get("mca") is None:
            assert "no scheduling information" in rep["mca_error"]
