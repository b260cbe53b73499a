"""Tests for the CPU probe: real CPU vs numpy's probe, injected CPUID/XCR0/HWCAP
values through the pure C decoders, sysfs caches, JSON round trip."""
import json
import platform
import sys

import pytest

import importlib

mp = importlib.import_module("microkernel.probe")  # the module; `microkernel.probe` is the function
from microkernel.tile import ISAS

IS_X86 = platform.machine().lower() in ("x86_64", "amd64")

# CPUID bit positions (Intel SDM vol. 2A, CPUID)
L1_ECX_FMA, L1_ECX_OSXSAVE, L1_ECX_AVX = 1 << 12, 1 << 27, 1 << 28
L7_EBX_AVX2, L7_EBX_F, L7_EBX_DQ, L7_EBX_BW, L7_EBX_VL = (
    1 << 5, 1 << 16, 1 << 17, 1 << 30, 1 << 31)
AVX2_LEAF1 = L1_ECX_FMA | L1_ECX_OSXSAVE | L1_ECX_AVX
AVX512_LEAF7 = L7_EBX_AVX2 | L7_EBX_F | L7_EBX_DQ | L7_EBX_BW | L7_EBX_VL


@pytest.fixture(scope="module")
def c_probe():
    return mp.load_c_probe()


def decode_x86(c_probe, leaf1_ecx, leaf7_ebx, xcr0, max_leaf=0xD, vendor=b"GenuineIntel"):
    """Run the pure x86 decoder on injected values; return (struct, CpuInfo)."""
    ffi, lib = c_probe
    regs = ffi.new("mk_x86_regs *")
    regs.leaf0.eax = max_leaf
    regs.leaf0.ebx = int.from_bytes(vendor[0:4], "little")
    regs.leaf0.edx = int.from_bytes(vendor[4:8], "little")
    regs.leaf0.ecx = int.from_bytes(vendor[8:12], "little")
    regs.leaf1.eax = 0x000806F8            # family 6, model 0x8F (Sapphire Rapids)
    regs.leaf1.ecx = leaf1_ecx
    regs.leaf7_0.ebx = leaf7_ebx
    feat = ffi.new("mk_cpu_features *")
    assert lib.mk_probe_decode_x86(regs, xcr0, feat) == 0
    return feat, mp.info_from_c(ffi, feat)


# -- (1) the real CPU agrees with numpy's probe ----------------------------------

@pytest.mark.skipif(not IS_X86, reason="x86-64 only")
def test_agrees_with_numpy_cpu_features():
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as npf
    except ImportError:
        from numpy.core._multiarray_umath import __cpu_features__ as npf
    info = mp.probe()
    f = info.features
    # numpy also checks XCR0 (npy_cpu_features.c), so compare with usable ISAs
    assert info.supports("avx2") == (npf["AVX2"] and npf["FMA3"] and npf["AVX"])
    assert (f["fma"] and f["os_ymm"]) == npf["FMA3"]
    assert (f["avx2"] and f["os_ymm"]) == npf["AVX2"]
    assert (f["avx512f"] and f["os_zmm"]) == npf["AVX512F"]
    assert info.supports("avx512") == npf["AVX512_SKX"]


def test_real_probe_is_consistent():
    info = mp.probe()
    assert mp.probe() is info                              # lru_cache
    # the best fp32 ISA (typed ISAs such as amx come after it in ISAS and serve their
    # own types only)
    assert info.isas[0] == "scalar"
    assert info.best_isa == [n for n in info.isas if ISAS[n].implied == "f32"][-1]
    assert list(info.isas) == [n for n in ISAS if n in info.isas]
    assert info.vector_registers == ISAS[info.best_isa].vector_registers
    if IS_X86:
        assert info.arch == "x86_64" and info.vendor
        assert not {"neon", "sve"} & set(info.isas)
        if info.best_isa != "sve":
            assert info.vector_bits == 32 * ISAS[info.best_isa].lanes
    with pytest.raises(ValueError, match="valid ISAs"):
        info.supports("sse9")


# -- (2) injected CPUID / XCR0 values --------------------------------------------

def test_avx512_cpuid_without_zmm_state_is_avx2_only(c_probe):
    feat, info = decode_x86(c_probe, AVX2_LEAF1, AVX512_LEAF7, xcr0=0x7)
    assert feat.avx512f and feat.avx512vl and not feat.os_zmm
    assert feat.usable_avx2 and not feat.usable_avx512
    assert info.isas == ("scalar", "avx2") and info.best_isa == "avx2"
    assert info.vector_bits == 256 and info.vector_registers == 16
    assert info.supports("avx2") and not info.supports("avx512")


def test_full_avx512_with_zmm_state(c_probe):
    feat, info = decode_x86(c_probe, AVX2_LEAF1, AVX512_LEAF7, xcr0=0xE7)
    assert feat.usable_avx512
    assert info.isas == ("scalar", "avx2", "avx512")
    assert (info.vector_bits, info.vector_registers) == (512, 32)
    assert info.vendor == "GenuineIntel"
    assert (info.features["family"], info.features["model"]) == (6, 0x8F)


@pytest.mark.parametrize("leaf1_ecx, xcr0", [
    (AVX2_LEAF1, 0),                         # OS saves no state
    (AVX2_LEAF1 & ~L1_ECX_OSXSAVE, 0xE7),    # OSXSAVE clear: XCR0 must be ignored
    (AVX2_LEAF1, 0x3),                       # YMM state off
    (AVX2_LEAF1 & ~L1_ECX_FMA, 0xE7),        # no FMA: no avx2 micro-kernels
])
def test_no_os_support_is_scalar_only(c_probe, leaf1_ecx, xcr0):
    feat, info = decode_x86(c_probe, leaf1_ecx, AVX512_LEAF7, xcr0)
    assert not feat.usable_avx2 and not feat.usable_avx512
    assert info.isas == ("scalar",) and info.vector_bits == 32


def test_avx512_missing_one_subset_is_not_avx512(c_probe):
    for missing in (L7_EBX_F, L7_EBX_DQ, L7_EBX_BW, L7_EBX_VL):
        feat, info = decode_x86(c_probe, AVX2_LEAF1, AVX512_LEAF7 & ~missing, 0xE7)
        assert info.isas == ("scalar", "avx2"), hex(missing)


def test_leaf7_ignored_when_max_leaf_below_7(c_probe):
    feat, info = decode_x86(c_probe, AVX2_LEAF1, AVX512_LEAF7, 0xE7, max_leaf=6)
    assert not feat.avx2 and info.isas == ("scalar",)


def test_arm_decoder(c_probe):
    ffi, lib = c_probe
    feat = ffi.new("mk_cpu_features *")
    # SVE + SVE2 at 32 bytes; MIDR of a Neoverse V1 (implementer 0x41, part 0xd40)
    assert lib.mk_probe_decode_arm((1 << 1) | (1 << 22), 1 << 1, 32, 0x411FD401, feat) == 0
    info = mp.info_from_c(ffi, feat)
    assert info.arch == "aarch64" and info.isas == ("scalar", "neon", "sve")
    assert info.sve_vector_bits == 256 == info.vector_bits
    assert info.vector_registers == 32 and info.features["sve2"]
    assert info.vendor == "ARM" and info.features["part"] == 0xD40
    # NEON only (cortex-a72): the VL argument must be ignored without HWCAP_SVE
    lib.mk_probe_decode_arm(1 << 1, 0, 32, 0, feat)
    info = mp.info_from_c(ffi, feat)
    assert info.isas == ("scalar", "neon") and info.sve_vector_bits is None
    assert info.vector_bits == 128


# -- (3) caches ----------------------------------------------------------------

@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sysfs")
def test_l1_data_cache_geometry():
    info = mp.probe()
    l1 = info.cache(1, "Data")
    assert l1 is not None and l1.size_bytes >= 4096
    assert l1.size_bytes == l1.ways * l1.sets * l1.line_bytes
    for c in info.caches:
        if c.ways and c.sets and c.line_bytes:
            assert c.size_bytes == c.ways * c.sets * c.line_bytes, c
    assert info.cache(2) is None or info.cache(2).level == 2


def test_read_caches_from_fake_sysfs(tmp_path):
    def index(n, **files):
        d = tmp_path / f"index{n}"
        d.mkdir()
        for k, v in files.items():
            (d / k).write_text(v + "\n")
    index(0, level="1", type="Data", size="48K", ways_of_associativity="12",
          number_of_sets="64", coherency_line_size="64")
    index(1, level="2", type="Unified", size="2048K")        # no geometry files
    index(2, level="3", type="Unified", ways_of_associativity="16",
          number_of_sets="32768", coherency_line_size="64")  # no size file
    index(3, type="Data", size="32K")                        # no level: skipped
    caches = mp.read_caches(tmp_path)
    assert [(c.level, c.size_bytes) for c in caches] == [
        (1, 48 << 10), (2, 2 << 20), (3, 32 << 20)]
    assert caches[1].ways is None
    assert mp.read_caches(tmp_path / "missing") == ()


@pytest.mark.parametrize("text, size", [("32K", 32 << 10), ("1024K", 1 << 20),
                                        ("32M", 32 << 20), ("512", 512)])
def test_parse_size(text, size):
    assert mp._parse_size(text) == size


# -- (4) JSON --------------------------------------------------------------------

def test_to_json_round_trip(capsys):
    info = mp.probe()
    d = info.to_json()
    assert json.loads(json.dumps(d)) == d
    assert mp.CpuInfo.from_json(json.loads(json.dumps(d))) == info
    assert mp.cli_probe(json_out=True) == 0
    assert json.loads(capsys.readouterr().out) == d
    assert mp.cli_probe(json_out=False) == 0
    assert info.best_isa in capsys.readouterr().out


@pytest.mark.parametrize("vendor,family,best,units", [
    ("AuthenticAMD", 0x19, "avx2", 2),      # Zen 3: two 256-bit FMA pipes
    ("AuthenticAMD", 0x19, "avx512", 1),    # Zen 4: a zmm FMA takes both pipes
    ("AuthenticAMD", 0x17, "avx2", None),   # not claimed
    ("GenuineIntel", 0x06, "avx512", None), # one or two 512-bit units by SKU: unknown
])
def test_fma_units_per_vendor_family_and_isa(vendor, family, best, units):
    probe_mod = importlib.import_module("microkernel.probe")
    assert probe_mod._fma_units(vendor, family, best) == units
