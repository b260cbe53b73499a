"""The Arm typed ISAs (issue 22): names, register budgets, panel layouts, the generated
sources (no tools), the probe's decoding of their hwcap bits with injected values, and
dispatch refusing them here. The qemu runs are in tests/test_cross.py (the default
``microkernel cross``) and tests/test_cross_typed.py."""
import re

import pytest

import importlib

from microkernel import codegen, dispatch, registry
from microkernel.codegen import sme as sme_gen
from microkernel.tile import TileError, TileSpec, register_budget

mp = importlib.import_module("microkernel.probe")

ARM_TYPED = [s for s in registry.builtin(arch="aarch64") if s.info.form != "fma"]

# Linux hwcaps (Documentation/arch/arm64/elf_hwcaps.rst)
HWCAP_ASIMD, HWCAP_ASIMDHP, HWCAP_ASIMDDP, HWCAP_SVE, HWCAP_ASIMDFHM = (
    1 << 1, 1 << 10, 1 << 20, 1 << 22, 1 << 23)
HWCAP2_SVEI8MM, HWCAP2_SVEBF16, HWCAP2_I8MM, HWCAP2_BF16, HWCAP2_SME = (
    1 << 9, 1 << 12, 1 << 13, 1 << 14, 1 << 23)
HWCAP2_SME_I8I32, HWCAP2_SME_F16F32, HWCAP2_SME_B16F32, HWCAP2_SME_F32F32 = (
    1 << 26, 1 << 27, 1 << 28, 1 << 29)
SME_ALL = HWCAP2_SME | HWCAP2_SME_I8I32 | HWCAP2_SME_F16F32 | HWCAP2_SME_B16F32 | HWCAP2_SME_F32F32
EVERYTHING = (HWCAP_ASIMD | HWCAP_ASIMDHP | HWCAP_ASIMDDP | HWCAP_SVE | HWCAP_ASIMDFHM,
              HWCAP2_SVEI8MM | HWCAP2_SVEBF16 | HWCAP2_I8MM | HWCAP2_BF16 | SME_ALL)


def test_every_arm_typed_isa_has_built_ins():
    assert {s.isa for s in ARM_TYPED} == {"neondot", "neoni8mm", "neonbf16", "neonfp16",
                                          "svei8mm", "svebf16", "sme"}


@pytest.mark.parametrize("name,isa,types,mr,nr", [
    ("neondot_s8s8_8x12", "neondot", "s8s8", 8, 12), ("neonbf16_8x8", "neonbf16", "bf16", 8, 8),
    ("neonfp16_8x24", "neonfp16", "f16h", 8, 24), ("neonfp16_f16_8x8", "neonfp16", "f16", 8, 8),
    ("svei8mm_u8s8_8x2v", "svei8mm", "u8s8", 8, 2), ("sme_2x2v", "sme", "f32", 2, 2),
    ("sme_bf16_1x4v_u2", "sme", "bf16", 1, 4)])
def test_typed_arm_names_round_trip(name, isa, types, mr, nr):
    s = TileSpec.from_name(name)
    assert (s.isa, s.types, s.mr, s.nr, s.name) == (isa, types, mr, nr, name)


@pytest.mark.parametrize("name,match", [
    ("neondot_8x12", "name their input types"),          # neondot implies no types
    ("neonbf16_bf16_8x8", "without saying so"),            # neonbf16 implies bf16
    ("neoni8mm_s8s8_7x8", "rows in pairs"),                # SMMLA makes 2x2 blocks
    ("neonfp16_8x12", "multiple of its 8"),                # 8 fp16 lanes
    ("sme_3x2v", "ZA has 4"),                              # six 32-bit ZA tiles
    ("sme_2x2", "count NR in vectors"), ("svei8mm_s8s8_8x2", "count NR in vectors"),
    ("neoni8mm_f16_8x8", "take the input types"),
])
def test_bad_typed_arm_names(name, match):
    with pytest.raises(TileError, match=match):
        TileSpec.from_name(name)


def test_register_budgets_of_the_built_ins():
    def b(name):
        x = register_budget(TileSpec.from_name(name))
        return x.accumulators, x.b_vectors, x.broadcasts
    assert b("neondot_s8s8_8x12") == (24, 3, 2)      # 3 B + 2 A vectors of 4 x 4 int8
    assert b("neoni8mm_s8s8_8x8") == (16, 4, 1)      # 2x2 blocks; one A row pair at a time
    assert b("neonbf16_8x8") == (16, 4, 1)
    assert b("neonfp16_8x24") == (24, 3, 1)          # fp16 accumulators of 8 lanes
    assert b("neonfp16_f16_8x8") == (16, 1, 1)       # FMLAL: 2 fp32 accumulators per B vector
    assert b("svei8mm_s8s8_8x2v") == (16, 4, 1)      # 2 nv B vectors per K group
    assert b("sme_2x2v") == (4, 2, 2)                # ZA tiles; 2 B and 2 A vectors
    for s in ARM_TYPED:
        assert register_budget(s).needed <= s.info.vector_registers


@pytest.mark.parametrize("name,ga,ta,tc", [
    ("neondot_u8s8_8x12", 4, "uint8_t", "int32_t"), ("neoni8mm_s8s8_8x8", 8, "int8_t", "int32_t"),
    ("neonbf16_8x8", 4, "uint16_t", "float"), ("neonfp16_8x24", 1, "uint16_t", "float"),
    ("svei8mm_u8u8_8x2v", 8, "uint8_t", "int32_t"), ("svebf16_8x2v", 4, "uint16_t", "float"),
    ("sme_bf16_2x2v", 2, "uint16_t", "float"), ("sme_s8s8_2x2v", 4, "int8_t", "int32_t"),
    ("sme_2x2v", 1, "float", "float")])
def test_panel_layouts_hold_k_in_the_instructions_groups(name, ga, ta, tc):
    """The K group of a panel is what one instruction consumes per output: 32 bits per
    lane for SDOT and the SME widening forms, 64 for SMMLA/BFMMLA, one for FMLA/FMLAL."""
    lay = codegen.layout(TileSpec.from_name(name))
    assert (lay.ga, lay.gb, lay.ta, lay.tc) == (ga, ga, ta, tc)


def test_types_needs_beyond_the_isa():
    s = TileSpec.from_name("neondot_u8s8_8x12")
    assert s.feature == "i8mm" and s.cflags[-1] == "-march=armv8.2-a+dotprod+i8mm"
    assert TileSpec.from_name("neondot_s8s8_8x12").feature is None
    assert TileSpec.from_name("neonfp16_f16_8x8").feature == "asimdfhm"
    assert "+fp16fml" in TileSpec.from_name("neonfp16_f16_8x8").cflags[-1]
    assert not any("fp16fml" in f for f in TileSpec.from_name("neonfp16_8x24").cflags)
    assert TileSpec.from_name("sme_bf16_2x2v").feature == "sme_b16f32"
    assert TileSpec.from_name("sme_s8s8_2x2v").feature == "sme_i8i32"
    # SME's C parts are baseline: no SVE outside streaming mode (Apple's M4 has none)
    assert TileSpec.from_name("sme_2x2v").cflags == ("-march=armv8-a",)


#: SVE/SME and general-purpose instructions the SME streaming region may use; no
#: Advanced SIMD (illegal in streaming mode without FEAT_SME_FA64)
_STREAMING_OK = {"smstart", "smstop", "zero", "ptrue", "cntw", "ld1w", "ld1h", "ld1b", "ld1rw",
                 "fmopa", "bfmopa", "smopa", "umopa", "usmopa", "addvl", "subs", "b.ne",
                 "cbz", "mov", "whilelt", "add", "cmp", "b.le", "b.eq", "b.lt", "b.ge", "b",
                 "csel", "mova", "fmul", "mul", "fmla", "mla", "st1w", "ldr", "str", "sub",
                 "mrs", "brk", "fmov", "dup"}


def _streaming_lines(src: str) -> list[str]:
    lines = re.findall(r'^\s*"([^"\n]*)\\n\\t"$', src, re.M)
    out, inside = [], False
    for x in lines:
        if x == "smstart":
            inside = True
        elif x == "smstop":
            inside = False
        elif inside and not re.match(r"^\d+:$", x):
            out.append(x)
    return out


@pytest.mark.parametrize("name", ["sme_2x2v", "sme_bf16_2x2v", "sme_f16_2x2v", "sme_s8s8_2x2v",
                                  "sme_u8s8_1x4v_u2", "sme_4x1v_u3"])
def test_sme_streaming_region_has_no_neon_and_reads_the_svl(name):
    spec = TileSpec.from_name(name)
    src = codegen.generate(spec)
    body = _streaming_lines(src)
    assert body, "no streaming region found"
    for line in body:
        mn = line.split()[0]
        assert mn in _STREAMING_OK, f"{name}: {line!r} in streaming mode"
        # a V register or an Advanced SIMD arrangement would be a NEON instruction
        assert not re.search(r"\bv\d+\.|\b[vq]\d+\b|\.(4s|8h|16b|2d)\b", line), line
    assert src.count("smstart") == src.count("smstop") >= 1
    mopas = [x for x in body if x.split()[0].endswith("mopa")]
    assert len(mopas) == spec.mr * spec.nr * (1 + (spec.k_unroll > 1) * spec.k_unroll)
    # clobbers every Z (V), P register and FFR: SMSTART/SMSTOP zero them
    for reg in ('"v8"', '"v15"', '"v31"', '"p15"', '"ffr"'):
        assert reg in src
    assert "rdsvl" in src and "-msve-vector-bits" not in src
    assert codegen.mr_expr(spec) == f"(int64_t)({spec.mr} * mk_sme_svl_words())"
    assert codegen.edge_symbol(spec) == f"mk_ukernel_{name}_edge"


def test_sme_kernel_list_line_has_run_time_mr_and_nr():
    lst = codegen.kernel_list([TileSpec.from_name("sme_2x2v"), TileSpec.from_name("svebf16_8x2v")])
    assert "MK_KERNEL(sme_2x2v, sme, 0, 0, 2, 1, 1)" in lst
    assert "MK_KERNEL(svebf16_8x2v, svebf16, 8, 0, 2, 1, 1)" in lst


def test_generated_sources_use_the_instructions_they_claim():
    g = lambda n: codegen.generate(TileSpec.from_name(n))  # noqa: E731
    assert g("neondot_s8s8_8x12").count("vdotq_laneq_s32") == 24
    assert g("neondot_u8s8_8x12").count("vsudotq_laneq_s32") == 24
    assert g("neoni8mm_u8s8_8x8").count("vusmmlaq_s32") == 16
    assert g("neonbf16_8x8").count("vbfmmlaq_f32") == 16
    assert g("neonfp16_8x24").count("MK_FMLA_LANE(") == 24 + 1      # + its definition
    assert g("neonfp16_f16_8x8").count("vfmlalq_laneq_high_f16") == 8
    assert g("svei8mm_s8s8_8x2v").count("svmmla_s32") == 2 * 16     # full and edge
    assert g("svei8mm_s8s8_8x2v").count("svld1rq_s8") == 2 * 4
    assert "svuzp1_s64" in g("svebf16_8x2v") and "vzip2q_s64" in g("neoni8mm_s8s8_8x8")
    assert sme_gen.SVL_WORDS in g("sme_2x2v")


# -- the probe ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def c_probe():
    return mp.load_c_probe()


def decode(c_probe, hwcap, hwcap2, sve_bytes=0, sme_bytes=0):
    ffi, lib = c_probe
    feat = ffi.new("mk_cpu_features *")
    assert lib.mk_probe_decode_arm2(hwcap, hwcap2, sve_bytes, sme_bytes, 0x410FD4F0, feat) == 0
    return mp.info_from_c(ffi, feat)


def test_probe_clears_every_typed_isa_from_its_bits(c_probe):
    info = decode(c_probe, *EVERYTHING, sve_bytes=32, sme_bytes=64)
    assert info.isas == ("scalar", "neon", "sve", "neondot", "neoni8mm", "neonbf16",
                         "neonfp16", "svei8mm", "svebf16", "sme")
    assert info.best_isa == "sve" and info.sve_vector_bits == 256     # SME is never "best"
    assert info.features["sme_vector_bits"] == 512
    assert all(info.supports_tile(s) for s in ARM_TYPED)
    assert info.supports_tile(TileSpec.from_name("sme_s8s8_2x2v"))


def test_probe_a_cortex_a76(c_probe):
    """ASIMDHP and ASIMDDP without FHM or I8MM (qemu's cortex-a76): neondot s8s8/u8u8 and
    neonfp16 f16h, not the SUDOT and FMLAL tiles of the same ISAs."""
    info = decode(c_probe, HWCAP_ASIMD | HWCAP_ASIMDHP | HWCAP_ASIMDDP, 0)
    assert info.isas == ("scalar", "neon", "neondot", "neonfp16") and info.best_isa == "neon"
    sup = lambda n: info.supports_tile(TileSpec.from_name(n))  # noqa: E731
    assert sup("neondot_s8s8_8x12") and sup("neondot_u8u8_8x12") and sup("neonfp16_8x24")
    assert not sup("neondot_u8s8_8x12") and not sup("neonfp16_f16_8x8")
    assert not sup("neoni8mm_s8s8_8x8") and not sup("sme_2x2v")


@pytest.mark.parametrize("hwcap,hwcap2,sve,sme,absent", [
    (HWCAP_ASIMD, HWCAP2_SVEI8MM | HWCAP2_SVEBF16, 0, 0, ("svei8mm", "svebf16")),  # no SVE
    (HWCAP_ASIMD | HWCAP_SVE, HWCAP2_SVEI8MM, 0, 0, ("sve", "svei8mm")),          # VL 0: broken
    (0, HWCAP2_I8MM | HWCAP2_BF16, 0, 0, ("neoni8mm", "neonbf16")),               # no ASIMD
    (HWCAP_ASIMD, SME_ALL & ~HWCAP2_SME_F32F32, 0, 64, ("sme",)),                 # no FMOPA fp32
    (HWCAP_ASIMD, SME_ALL, 0, 0, ("sme",)),                                       # SVL 0: broken
    (HWCAP_ASIMD, SME_ALL & ~HWCAP2_SME, 0, 64, ("sme",)),                        # ZA bits alone
])
def test_probe_refuses_incomplete_reports(c_probe, hwcap, hwcap2, sve, sme, absent):
    info = decode(c_probe, hwcap, hwcap2, sve, sme)
    for isa in absent:
        assert isa not in info.isas, (isa, info.isas)


def test_sme_types_need_their_za_bits(c_probe):
    info = decode(c_probe, HWCAP_ASIMD, HWCAP2_SME | HWCAP2_SME_F32F32, 0, 32)
    assert "sme" in info.isas and info.features["sme_vector_bits"] == 256
    assert info.supports_tile(TileSpec.from_name("sme_2x2v"))
    for n in ("sme_bf16_2x2v", "sme_f16_2x2v", "sme_s8s8_2x2v"):
        assert not info.supports_tile(TileSpec.from_name(n)), n


# -- dispatch on this (non-Arm) host ----------------------------------------------------------

@pytest.mark.skipif("neondot" in mp.probe().isas, reason="this host runs neondot")
def test_forcing_an_arm_typed_isa_here_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("MICROKERNEL_ISA", "neondot")
    with pytest.raises(dispatch.IsaUnavailableError, match="cannot run neondot"):
        dispatch.usable_isas()
    monkeypatch.delenv("MICROKERNEL_ISA")
    with pytest.raises(dispatch.IsaUnavailableError, match="needs neondot"):
        dispatch.get_kernel("neondot_s8s8_8x12")
