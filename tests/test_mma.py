"""The tensor-core path's pure-Python parts: fragment layouts, the numpy mma model,
the bank-conflict model, MmaTile's shared-memory layouts and the port rule.

Nothing here imports numba; the expected values are written from the PTX ISA
tables (section 9.7.14.5.8 / 9.7.14.5.7) and from hand-counted bank patterns, not
computed by the code under test.
"""
import dataclasses
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from microkernel.gpu import banks, fragments as F, mma_port, mma_tile as T


# -- fragment layouts ------------------------------------------------------------------

@pytest.mark.parametrize("key", ["f16", "bf16", "tf32"])
def test_every_element_owned_exactly_once(key):
    ins = F.INSTRUCTIONS[key]
    for lay in (ins.a, ins.b, ins.c):
        lay.check()
        counts = np.zeros((lay.rows, lay.cols), int)
        for lane in range(32):
            for reg in range(lay.regs):
                for half in range(lay.per_reg):
                    r, c = lay.element(lane, reg, half)
                    counts[r, c] += 1
        assert (counts == 1).all()
    assert (ins.a.rows, ins.a.cols, ins.b.rows, ins.b.cols) == (16, ins.k, ins.k, 8)


# (lane, PTX element name, (row, col)) written from the PTX tables by hand
# (groupID = lane >> 2, threadID_in_group = lane % 4).
HAND_16816 = [
    ("A", 0, 0, (0, 0)), ("A", 0, 1, (0, 1)), ("A", 0, 2, (8, 0)), ("A", 0, 3, (8, 1)),
    ("A", 0, 4, (0, 8)), ("A", 0, 5, (0, 9)), ("A", 0, 6, (8, 8)), ("A", 0, 7, (8, 9)),
    ("A", 5, 0, (1, 2)), ("A", 5, 3, (9, 3)), ("A", 5, 4, (1, 10)), ("A", 5, 7, (9, 11)),
    ("A", 31, 0, (7, 6)), ("A", 31, 7, (15, 15)),
    ("B", 0, 0, (0, 0)), ("B", 0, 1, (1, 0)), ("B", 0, 2, (8, 0)), ("B", 0, 3, (9, 0)),
    ("B", 6, 0, (4, 1)), ("B", 6, 1, (5, 1)), ("B", 6, 2, (12, 1)), ("B", 6, 3, (13, 1)),
    ("C", 0, 0, (0, 0)), ("C", 0, 1, (0, 1)), ("C", 0, 2, (8, 0)), ("C", 0, 3, (8, 1)),
    ("C", 30, 0, (7, 4)), ("C", 30, 1, (7, 5)), ("C", 30, 2, (15, 4)), ("C", 30, 3, (15, 5)),
]
HAND_1688_TF32 = [
    ("A", 0, 0, (0, 0)), ("A", 0, 1, (8, 0)), ("A", 0, 2, (0, 4)), ("A", 0, 3, (8, 4)),
    ("A", 13, 0, (3, 1)), ("A", 13, 1, (11, 1)), ("A", 13, 2, (3, 5)), ("A", 13, 3, (11, 5)),
    ("B", 13, 0, (1, 3)), ("B", 13, 1, (5, 3)), ("B", 31, 1, (7, 7)),
    ("C", 13, 2, (11, 2)),
]


@pytest.mark.parametrize("key, table", [("f16", HAND_16816), ("bf16", HAND_16816),
                                        ("tf32", HAND_1688_TF32)])
def test_layouts_match_the_ptx_tables(key, table):
    ins = F.INSTRUCTIONS[key]
    for op, lane, i, rc in table:
        lay = {"A": ins.a, "B": ins.b, "C": ins.c}[op]
        reg, half = divmod(i, lay.per_reg)
        assert lay.element(lane, reg, half) == rc, (op, lane, i)
        assert lay.owner(*rc) == (lane, reg, half)


def test_layout_rejects_a_non_bijection():
    with pytest.raises(ValueError, match="owned twice"):
        F.FragmentLayout("bad", "C", 16, 8, 4, 1, "f32", lambda ln, r, h: (ln >> 2, r))
    with pytest.raises(ValueError, match="outside"):
        F.FragmentLayout("bad", "C", 16, 8, 4, 1, "f32", lambda ln, r, h: (ln, r))
    with pytest.raises(IndexError):
        F.M16N8K16_F16.a.owner(16, 0)


def test_gather_scatter_and_pack_roundtrip():
    ins = F.M16N8K16_F16
    M = (np.arange(256, dtype=np.float32) - 100).reshape(16, 16) / 8
    fr = ins.a.gather(M)
    assert fr.shape == (32, 4, 2) and fr[0, 2, 1] == M[0, 9]
    assert np.array_equal(ins.a.scatter(fr), M)
    regs = F.pack(ins.a, fr)
    assert regs.dtype == np.uint32 and regs.shape == (32, 4)
    # a0 in the low half, a1 in the high half of register 0 (PTX: "low to high")
    assert regs[0, 0] & 0xFFFF == np.float16(M[0, 0]).view(np.uint16)
    assert regs[0, 0] >> 16 == np.float16(M[0, 1]).view(np.uint16)
    assert np.array_equal(F.unpack(ins.a, regs), fr)


def test_rounding_to_bf16_and_tf32():
    x = np.array([1.0, 1 + 2**-8, 1 + 3 * 2**-9, 1 + 2**-11, 1 + 3 * 2**-12, -2.5, np.inf],
                 np.float32)
    # bf16: 7 mantissa bits, ties to even; tf32: 10 bits, ties away from zero
    assert list(F.round_bf16(x)[:4]) == [1.0, 1.0, 1 + 2**-7, 1.0]
    assert list(F.round_tf32(x)[3:5]) == [1 + 2**-10, 1 + 2**-10]
    assert F.round_tf32(x)[6] == np.inf and np.isnan(F.round_tf32(np.float32(np.nan))[()])
    assert F.from_bits(np.uint16(0x3F80), "bf16") == 1.0


@pytest.mark.parametrize("key", ["f16", "bf16", "tf32"])
def test_numpy_mma_against_float64(key, mma_operands):
    ins = F.INSTRUCTIONS[key]
    rng = np.random.default_rng(7)
    A, B, C = mma_operands(ins, lambda shape: rng.uniform(-2, 2, shape))
    el = ins.in_elem
    Ar = F.from_bits(F.to_bits(A, el), el).astype(np.float64)
    Br = F.from_bits(F.to_bits(B, el), el).astype(np.float64)
    d = F.mma_sync(key, F.pack(ins.a, ins.a.gather(A)), F.pack(ins.b, ins.b.gather(B)),
                   ins.c.gather(C)[..., 0])
    D = ins.c.scatter(d[..., None])
    ref = Ar @ Br + C
    # one rounding to fp32: |err| <= 2^-24 |ref| (+ the tiniest subnormal slack)
    assert np.all(np.abs(D - ref) <= 2.0**-24 * np.abs(ref) + 1e-30)
    assert not np.array_equal(D, (A.astype(np.float64) @ B + C).astype(np.float32)) or \
        key == "f16"      # the rounded inputs differ from float32 ones (bf16/tf32)


def test_lane_map_text_and_png(tmp_path):
    txt = F.lane_map_text(F.M16N8K16_F16.c)
    lines = txt.splitlines()
    assert "PTX ISA" in lines[0]
    # row 8 starts with lane 0's c2, row 0 column 1 is lane 0's c1
    assert lines[2 + 8].split()[1] == "T0:c2" and lines[2].split()[2] == "T0:c1"
    pytest.importorskip("matplotlib")
    path = F.lane_map_png("tf32", tmp_path / "tf32.png")
    assert os.path.getsize(path) > 10000
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


# -- the bank-conflict model -------------------------------------------------------------

@pytest.mark.parametrize("kind, addrs, expected", [
    ("ld32", [4 * i for i in range(32)], 1),                 # consecutive words
    ("ld32", [128 * i for i in range(32)], 32),              # stride 32 words: one bank
    ("ld32", [8 * i for i in range(32)], 2),                 # stride 2 words: 2-way
    ("ld32", [132 * i for i in range(32)], 1),               # stride 33 words: padded
    ("ld32", [64] * 32, 1),                                  # one word: broadcast
    ("ld32", [4 * (i % 4) for i in range(32)], 1),           # 4 words shared by 8 lanes
    ("ld64", [8 * i for i in range(32)], 2),                 # two half-warp phases
    ("ld128", [16 * i for i in range(32)], 4),               # four quarter-warp phases
    ("ld128", [256 * i for i in range(32)], 32),             # 8-way in each phase
    ("ldmatrix.x4", [64 * i for i in range(32)], 16),        # 64-B rows: 4-way per matrix
    ("ldmatrix.x4", [80 * i for i in range(32)], 4),         # 80-B rows: conflict-free
    ("ldmatrix.x1", [256 * i for i in range(8)] + [None] * 24, 8),
])
def test_bank_model_known_patterns(kind, addrs, expected):
    assert banks.wavefronts(kind, addrs) == expected


def test_bank_model_errors_and_cost():
    with pytest.raises(ValueError):
        banks.wavefronts("ld32", [0] * 31)
    with pytest.raises(ValueError):
        banks.wavefronts("ld1024", [0] * 32)
    c = banks.cost(banks.Request("x", "ld32", tuple(128 * i for i in range(32))))
    assert (c.wavefronts, c.ideal, c.conflicts, c.ways) == (32, 1, 31, 32.0)


def test_kernel_layouts_against_bank_conflicts():
    """Swizzle and padding make every ldmatrix/ld.shared of the kernel conflict-free;
    the unpadded layout does not (A: 4-way, B: 8-way for f16 64x64 warp tiles)."""
    for tile in (T.MmaTile("f16", stages=2), T.MmaTile("tf32", bk=16, stages=2),
                 T.MmaTile("bf16", 32, 32, 2, 2, 16, 2), T.MmaTile("tf32", 16, 32, 2, 1, 8, 2)):
        rep = T.bank_report(tile)
        assert rep["swizzle"]["load_conflicts"] == 0, tile.name
        assert rep["pad"]["load_conflicts"] == 0, tile.name
        assert rep["none"]["load_conflicts"] > 0, tile.name
        assert rep["swizzle"]["store_conflicts"] == 0, tile.name
    rows = {(r["request"], r["kind"]): r for r in
            T.bank_report(T.MmaTile("f16", stages=2))["none"]["requests"]}
    assert rows[("A ldmatrix.x4", "ldmatrix.x4")]["wavefronts"] == 16
    assert rows[("B ldmatrix.x4.trans", "ldmatrix.x4")]["wavefronts"] == 32


def test_swizzle_is_a_permutation_within_the_slice():
    for tile in (T.MmaTile("f16", stages=2), T.MmaTile("tf32", 16, 32, 2, 1, 8, 2),
                 T.MmaTile("f16", 16, 16, 2, 1, 16, 2)):
        for lay in (tile.a_layout, tile.b_layout):
            offs = {lay.offset(r, c * 16) for r in range(lay.rows)
                    for c in range(lay.row_bytes // 16)}
            assert len(offs) == lay.rows * lay.row_bytes // 16
            assert max(offs) < lay.bytes and all(o % 16 == 0 for o in offs)


@pytest.mark.parametrize("kw, match", [
    (dict(wm=8), "multiples of 16"), (dict(stages=1), "stages"), (dict(smem="xor"), "smem"),
    (dict(precision="int8"), "precision"), (dict(bk=24), "bk"),
    (dict(warps_m=8, warps_n=8), "1024"), (dict(bk=64, stages=4), "shared memory"),
    (dict(bk=128, stages=4, dynamic_smem=True), "dynamic shared memory"),
    (dict(pipeline="cutlass"), "pipeline"), (dict(frag_buffers=2), "pipelined"),
    (dict(pipeline="pipelined", frag_buffers=3), "frag_buffers"), (dict(group_m=0), "positive"),
    (dict(wm=0), "positive"),
])
def test_mma_tile_errors(kw, match):
    with pytest.raises(ValueError, match=match):
        T.MmaTile(**kw)


# -- the port rule -----------------------------------------------------------------------

def test_port_rule_avx512_8x16_is_a_64x64_warp_tile():
    p = mma_port.plan_mma("avx512_8x16", "f16")
    assert (p.tile.wm, p.tile.wn, p.tile.fragments, p.tile.accumulators) == (64, 64, 32, 128)
    assert p.warps_per_cpu_tile == 1 and p.tile.threads == 128
    assert (p.tile.bm, p.tile.bn) == (128, 128) and p.tile.smem_bytes <= 48 * 1024
    d = p.as_dict()
    assert d["cpu_accumulators"] == 128 and d["accumulators_per_lane"] == 128
    assert mma_port.warp_tile_for(24) == (3, 8)            # 96 accumulators: 48x64
    assert mma_port.warp_tile_for(4) == (1, 4)             # 16: 16x32 (wider on a tie)
    big = mma_port.plan_mma("avx512_8x32", "tf32")          # 256 accumulators: split
    assert big.warps_per_cpu_tile == 2 and big.tile.accumulators == 128
    assert T.estimate_regs(big.tile) <= 255 - mma_port.REG_MARGIN
    with pytest.raises(ValueError):
        mma_port.plan_mma("avx512_8x16", "fp8")


def test_port_cli_mma_json_no_compile(capsys):
    import argparse
    from microkernel.commands import port as port_cmd
    ap = argparse.ArgumentParser()
    port_cmd.add_arguments(ap)
    assert port_cmd.run(ap.parse_args(["avx512_8x16", "--mma", "f16", "--json",
                                      "--no-compile"])) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["plan"]["warp_tile"] == [64, 64]
    assert rep["plan"]["est_occupancy"]["limiter"] == "registers"
    assert rep["banks"]["none"]["load_conflicts"] > 0 == rep["banks"]["swizzle"]["load_conflicts"]
    assert port_cmd.run(ap.parse_args(["avx2_6x16", "--mma", "bf16", "--no-compile",
                                      "--smem", "pad"])) == 0
    out = capsys.readouterr().out
    assert "48x64" in out and "wavefronts" in out and "pad (kernel)" in out
    assert port_cmd.run(ap.parse_args(["nosuch_1x1", "--mma", "f16", "--json"])) == 2


def _have_offline_toolchain() -> bool:
    import shutil
    if not shutil.which("ptxas"):
        return False
    try:
        import numba  # noqa: F401
        from cuda.bindings import nvrtc
        nvrtc.nvrtcVersion()          # raises when libnvrtc cannot be loaded
    except Exception:  # noqa: BLE001
        return False
    return True


@pytest.mark.skipif(not _have_offline_toolchain(), reason="needs ptxas, numba-cuda and NVRTC")
def test_offline_ptx_and_ptxas():
    """The real kernel (not the simulator) compiles to PTX and assembles for sm_90
    with no local memory; mma.sync, ldmatrix and cp.async are in the PTX."""
    code = (
        "import json\n"
        "from microkernel.gpu import mma_kernel as MK, mma_tile as T\n"
        "out = {}\n"
        "for t in (T.MmaTile('f16', 32, 32, 2, 1, 32, 2, 'swizzle'),"
        " T.MmaTile('tf32', 16, 32, 1, 2, 16, 2, 'pad')):\n"
        "    k = MK.MmaKernel(t, False)\n"
        "    ptx = k.ptx()\n"
        "    out[t.name] = dict(k.ptxas(), mma=ptx.count('mma.sync.aligned'),"
        " ldsm=ptx.count('ldmatrix.sync'), cp=ptx.count('cp.async.cg'))\n"
        "print(json.dumps(out))\n")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    f16 = res["mma_f16_w32x32_b64x32x32_s2_swizzle"]
    assert f16["local_bytes"] == 0 and f16["spill_stores"] == 0
    assert f16["mma"] == 2 * 2 * 4 and f16["ldsm"] == 2 * (2 + 2) and f16["cp"] >= 1
    assert 0 < f16["regs"] <= 255
    tf = res["mma_tf32_w16x32_b16x64x16_s2_pad"]
    assert tf["local_bytes"] == 0 and tf["mma"] == 2 * 1 * 4
    assert dataclasses.is_dataclass(T.MmaTile)
