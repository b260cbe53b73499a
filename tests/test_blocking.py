"""The analytical blocking model (microkernel/blocking.py) on the caches of the two
machines this project measures on, against values worked out by hand from Low et al.
2016's rules with this project's two refinements (C_Ar not floored; half the L2 ways
for the A block), the empirical cap on MC (the A block at most 2 x L1) and the
fallbacks."""
import pytest

from microkernel.blocking import FALLBACK, NC_CAP, model_blocking
from microkernel.probe import Cache


def _caches(l1, l2, l3):
    """(ways, sets) per level, 64-byte lines."""
    out = [Cache(1, "Instruction", 32768, 8, 64, 64)]
    for level, spec in ((1, l1), (2, l2), (3, l3)):
        if spec:
            ways, sets = spec
            out.append(Cache(level, "Data" if level == 1 else "Unified", ways * sets * 64,
                             ways, sets, 64))
    return out


ZEN3 = _caches((8, 64), (8, 1024), (16, 32768))            # 32 KiB, 512 KiB, 32 MiB
SAPPHIRE_RAPIDS = _caches((12, 64), (16, 2048), (20, 245760))  # 48 KiB, 2 MiB, 300 MiB


@pytest.mark.parametrize("caches,mr,nr,kc,mc,nc", [
    # C_Ar = 7 / (1 + 24/4) = 1: KC = 1 * 64 * 64 / (4 * 4) = 256.
    # C_Ac = 8/2 - 1 - ceil(2*256*24*4 / 65536) = 2: MC = 2 * 65536 / (256 * 4) = 128;
    # cap 2 * 32768 / (256 * 4) = 64.
    # C_Bc = 15 - ceil(2*256*64*4 / 2097152) = 14: 14 * 2097152 / 1024 = 28672 -> cap 4080.
    (ZEN3, 4, 24, 256, 64, 4080),
    # C_Ar = 7 / (1 + 16/6) = 1.909: KC = 1.909 * 4096 / 24 = 325.8 -> 320 (multiple of 16).
    # C_Ac = 4 - 1 - ceil(2*320*16*4 / 65536) = 2: MC = 131072 / 1280 = 102.4 -> 102 (MR = 6);
    # cap 65536 / 1280 = 51.2 -> 48.
    (ZEN3, 6, 16, 320, 48, 4080),
    # C_Ar = 11 / (1 + 32/8) = 2.2: KC = 2.2 * 4096 / 32 = 281.6 -> 272.
    # C_Ac = 8 - 1 - ceil(2*272*32*4 / 131072) = 6: MC = 6 * 131072 / 1088 = 722.8 -> 720;
    # cap 2 * 49152 / 1088 = 90.4 -> 88.
    # NC capped at 4080 -> 4064 (a multiple of NR = 32).
    (SAPPHIRE_RAPIDS, 8, 32, 272, 88, 4064),
    # C_Ar = 11 / 3: KC = 3.667 * 4096 / 32 = 469.3 -> 464; C_Ac = 6: MC = 786432 / 1856 -> 416;
    # cap 98304 / 1856 = 53.0 -> 48.
    (SAPPHIRE_RAPIDS, 8, 16, 464, 48, 4080),
])
def test_model_matches_the_hand_computed_blocking(caches, mr, nr, kc, mc, nc):
    b = model_blocking(mr, nr, caches)
    assert (b.kc, b.mc, b.nc) == (kc, mc, nc)
    assert b.mc % mr == 0 and b.nc % nr == 0 and b.nc <= NC_CAP
    assert [w.split("=")[0] for w in b.why] == ["KC", "MC", "NC"]


def test_the_mc_cap_says_what_it_replaced():
    b = model_blocking(8, 32, SAPPHIRE_RAPIDS)
    assert "L2 rule gives 720" in b.why[1] and "2 x L1 = 96 KiB" in b.why[1]


def test_mc_below_the_cap_comes_from_the_l2():
    # a 256 KiB 8-way L2 (512 sets, 32 KiB a way): C_Ac = 4 - 1 - ceil(2*256*24*4 / 32768)
    # = 1, MC = 32768 / 1024 = 32, under the cap of 64
    b = model_blocking(4, 24, _caches((8, 64), (8, 512), (16, 32768)))
    assert (b.kc, b.mc) == (256, 32) and "capped" not in b.why[1]


def test_nc_below_the_cap_comes_from_the_l3():
    # a 1 MiB 16-way L3 (1024 sets, 64 KiB a way): 2*KC*MC*S = 2*256*64*4 bytes = 2 ways,
    # C_Bc = 16 - 1 - 2 = 13, NC = 13 * 65536 / (256 * 4) = 832
    b = model_blocking(4, 24, _caches((8, 64), (8, 1024), (16, 1024)))
    assert (b.kc, b.mc, b.nc) == (256, 64, 816)        # 832 rounded down to NR = 24


def test_missing_levels_fall_back():
    assert model_blocking(4, 24, _caches(None, (8, 1024), (16, 32768))) == FALLBACK
    no_l2 = model_blocking(4, 24, _caches((8, 64), None, (16, 32768)))
    # the default MC (120) is over the cap of 2 x 32 KiB / (256 * 4) = 64
    assert (no_l2.kc, no_l2.mc) == (256, 64) and FALLBACK.mc == 120
    assert "no L2 data" in no_l2.why[1] and "capped" in no_l2.why[1]
    no_l3 = model_blocking(4, 24, _caches((8, 64), (8, 1024), None))
    assert no_l3.nc == FALLBACK.nc // 24 * 24 and "no L3 data" in no_l3.why[2]


@pytest.mark.parametrize("a_bytes,b_bytes,kc,mc", [
    # bf16: KC = 4096 / 2 = 2048; MC = 2 MiB / 2 / (2048 * 2) = 256
    (2, 2, 2048, 256),
    # int8: KC = 4096 / 1 = 4096; MC = 1 MiB / 4096 = 256
    (1, 1, 4096, 256),
])
def test_tile_register_isas_block_for_the_l2(a_bytes, b_bytes, kc, mc):
    b = model_blocking(32, 32, SAPPHIRE_RAPIDS, a_bytes, b_bytes, l2_panels=True)
    assert (b.kc, b.mc) == (kc, mc)
    # NC: C_Bc = 19 - ceil(2*KC*MC*S_A / (64*245760)) = 18 -> far above the cap: 4064
    assert b.nc == 4064
    assert "L2" in b.why[0] and "half" in b.why[1]


@pytest.mark.parametrize("a_bytes,b_bytes,kc", [
    # bf16: the B micro-panel KC x 32 x 2 B = 48 KiB / 3 = 16 KiB -> KC = 256
    (2, 2, 256),
    # int8: KC x 32 x 1 B = 16 KiB -> KC = 512
    (1, 1, 512),
])
def test_tile_register_isas_at_one_thread_keep_the_b_micro_panel_in_l1(a_bytes, b_bytes, kc):
    b = model_blocking(32, 32, SAPPHIRE_RAPIDS, a_bytes, b_bytes, l2_panels=True, cstat=True)
    # MC: the A sub-block 2 MiB / 16 = 128 KiB = MC x KC x S_A -> 256 (both types);
    # NC: MC x NC x 4 B = 2 MiB / 2 -> 1024
    assert (b.kc, b.mc, b.nc) == (kc, 256, 1024)
    assert "L1" in b.why[0] and "L2" in b.why[1] and "L2" in b.why[2]
    # cstat is the one-thread model of the tile-register ISAs only
    assert model_blocking(32, 32, SAPPHIRE_RAPIDS, a_bytes, b_bytes, cstat=True) == \
        model_blocking(32, 32, SAPPHIRE_RAPIDS, a_bytes, b_bytes)


def test_team_chunks_default_agrees_with_the_c_mains_and_overrides_are_checked():
    # the C mains (sanitizer, aarch64 harness) build their mk_blocking with MK_TEAM_CHUNKS
    # and MK_TEAM_PARTS
    import re
    from pathlib import Path
    from microkernel.blocking import TEAM_CHUNKS, TEAM_PARTS
    header = (Path(__file__).parents[1] / "c_src" / "mk_ukernel.h").read_text()
    assert int(re.search(r"#define MK_TEAM_CHUNKS (\d+)", header)[1]) == TEAM_CHUNKS
    assert int(re.search(r"#define MK_TEAM_PARTS (\d+)", header)[1]) == TEAM_PARTS
    from microkernel.blocking import FLOW_BUFS, A_SLAB_MAX
    driver = (Path(__file__).parents[1] / "c_src" / "mk_team.h").read_text()
    assert int(re.search(r"#define MK_FLOW_BUFS (\d+)", driver)[1]) == FLOW_BUFS
    slices = (Path(__file__).parents[1] / "c_src" / "mk_slices.h").read_text()
    shift = re.search(r"#define MK_A_SLAB_MAX \((\d+) << (\d+)\)", slices)
    assert int(shift[1]) << int(shift[2]) == A_SLAB_MAX
    assert FALLBACK.chunks == TEAM_CHUNKS and FALLBACK.replace(chunks=0).chunks == 0
    assert FALLBACK.replace(parts=3).parts == 3
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="chunks must be a non-negative integer"):
            FALLBACK.replace(chunks=bad)
    assert FALLBACK.parts == TEAM_PARTS == 0 and FALLBACK.replace(parts=0).parts == 0
    for bad in (-1, -2, 2.0):
        with pytest.raises(ValueError, match="parts must be a non-negative integer"):
            FALLBACK.replace(parts=bad)
    from microkernel.commands.common import blocking_arg
    assert blocking_arg("kc=64,chunks=0") == {"kc": 64, "chunks": 0}
    assert blocking_arg("parts=4,chunks=8") == {"parts": 4, "chunks": 8}


def test_the_driver_reads_parts_and_refuses_a_negative_count():
    # the C driver itself (not the Python check) gets mk_blocking.parts: parts = -1 is
    # MK_EINVAL (-2) before any work; 0 (its own pick), 1 and a huge count (clamped)
    # compute C
    import numpy as np
    import microkernel as mk
    k = mk.get_kernel(mk.kernels()[0])
    ffi, lib = k.ffi, k.lib
    m, n, kk = 70, 90, 40
    A = np.random.default_rng(1).standard_normal((m, kk)).astype(np.float32)
    B = np.random.default_rng(2).standard_normal((kk, n)).astype(np.float32)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    fp = lambda x: ffi.cast("float *", x.ctypes.data)
    for parts, rc_want in ((-1, -2), (0, 0), (1, 0), (2 ** 62, 0)):
        C = np.full((m, n), np.nan, np.float32)
        blk = ffi.new("mk_blocking *", (32, 24, 48, 8, parts))
        rc = lib.mk_gemm(m, n, kk, 1.0, fp(A), kk, 1, fp(B), n, 1, 0.0, fp(C), n, 1, blk, 3)
        assert rc == rc_want, (parts, rc)
        if rc == 0:
            assert np.abs(C - ref).max() < 1e-3
        else:
            assert np.isnan(C).all()        # refused before any work


@pytest.mark.parametrize("caches,mr,nr,nc", [
    # KC = 272: 0.625 * 2097152 = 1310720 B / (272 * 4) = 1204.7 -> 1184 (a multiple of
    # NR = 32), at least NC_L2_MIN = 1024 and below the L3 rule's 4064
    (SAPPHIRE_RAPIDS, 8, 32, 1184),
    # KC = 464: 1310720 / 1856 = 706.2 < 1024: the L3 rule's 4080
    (SAPPHIRE_RAPIDS, 8, 16, 4080),
    # Zen 3, KC = 256: 0.625 * 524288 / 1024 = 320 < 1024: the L3 rule's 4080
    (ZEN3, 4, 24, 4080),
])
def test_one_thread_keeps_its_b_block_in_a_large_enough_l2(caches, mr, nr, nc):
    alone, team = model_blocking(mr, nr, caches, alone=True), model_blocking(mr, nr, caches)
    assert alone.nc == nc
    assert (alone.kc, alone.mc) == (team.kc, team.mc)
    assert alone.why[:2] == team.why[:2]
    assert ("L2" in alone.why[2]) == (alone.nc != team.nc)


def test_gemm_takes_the_one_thread_nc_at_one_thread_of_an_fp32_tile_only(monkeypatch):
    """blocking_for and what gemm() hands the C driver, on caches whose L2 is sized for
    this machine's fp32 default (whatever its tile) to get an L2 NC of about 2048, below
    the L3 rule's: one thread at any K gets it, two threads and typed tiles do not, and
    an override at one thread applies on top of it. The answers stay right."""
    import importlib
    from types import SimpleNamespace

    import numpy as np

    import microkernel as mk
    from microkernel import validate
    from microkernel.blocking import L2_B_SHARE
    from microkernel.tile import TileSpec
    gemm_mod = importlib.import_module("microkernel.gemm")     # the modules, not the
    probe_mod = importlib.import_module("microkernel.probe")   # functions of those names
    kern = mk.get_kernel(None)                       # (dispatch reads the real probe)
    kc = model_blocking(kern.mr, kern.nr, SAPPHIRE_RAPIDS).kc     # the L1 decides KC
    sets = -(-2048 * kc * 4 * 8 // 5 // (16 * 64))   # 16 ways x 64 B: 0.625 of it ~ 2048 columns
    big_l2 = _caches((12, 64), (16, sets), (20, 245760))
    for cache in ("_BLOCKING", "_PLANS", "_OVERRIDES", "_CBLOCKING"):
        monkeypatch.setattr(gemm_mod, cache, {})
    monkeypatch.setattr(probe_mod, "probe", lambda: SimpleNamespace(caches=big_l2))
    team = model_blocking(kern.mr, kern.nr, big_l2)
    nc1 = int(L2_B_SHARE * 16 * sets * 64) // (team.kc * 4) // kern.nr * kern.nr
    assert team.kc == kc and 2048 - kern.nr <= nc1 < team.nc
    assert gemm_mod.blocking_for(kern, 1).nc == nc1
    assert gemm_mod.blocking_for(kern, 2).nc == gemm_mod.blocking_for(kern).nc == team.nc
    assert gemm_mod._driver(kern, None, 1, 64)[2].nc == nc1
    assert gemm_mod._driver(kern, None, 1, 4096)[2].nc == nc1
    assert gemm_mod._driver(kern, None, 2, 64)[2].nc == team.nc
    over = gemm_mod._driver(kern, {"mc": 2 * kern.mr}, 1, 64)[2]
    assert (over.mc, over.nc) == (2 * kern.mr, nc1)
    typed = SimpleNamespace(mr=8, nr=32, spec=TileSpec.from_name("avx512bf16_8x32"))
    assert gemm_mod.blocking_for(typed, 1).nc == gemm_mod.blocking_for(typed).nc
    # three NC blocks at one thread, the last narrower than the others
    rng = np.random.default_rng(5)
    n = 2 * nc1 + 3 * kern.nr + 1
    A = rng.standard_normal((37, 19), dtype=np.float32)
    B = rng.standard_normal((19, n), dtype=np.float32)
    C = mk.gemm(A, B, kernel=kern, threads=1)
    ref, bound = validate.reference(A, B, np.zeros((37, n), np.float32), 1.0, 0.0)
    assert validate.check(C, ref, bound)[0]


def test_the_team_picks_the_fewest_parts_that_give_each_unit_mc_rows():
    # mk_team_parts(panels, ways, MC / MR): the least p <= TEAM_PARTS_MAX with
    # ceil(panels * p / ways) >= MC / MR (mk_run_team's rows per unit), else the most.
    # Sapphire Rapids' f32 default at 16 threads (MR 8, MC 88: 11 panels; 2 units per
    # thread, 32 ways): m = 1024 has 128 row panels, 128 / 32 = 4 per unit at p = 1,
    # 8 at 2, 12 at 3 -> 3; m = 2048: 8, 16 -> 2; m = 4096: 16 -> 1; a short C (5 panels)
    # never reaches 11 -> the most; MC of one panel -> 1
    import microkernel as mk
    from microkernel.blocking import TEAM_PARTS_MAX
    lib = mk.get_kernel(mk.kernels()[0]).lib
    assert TEAM_PARTS_MAX == 4
    for (panels, ways, mc_panels), want in (((128, 32, 11), 3), ((256, 32, 11), 2),
                                            ((512, 32, 11), 1), ((5, 32, 11), 4),
                                            ((5, 32, 1), 1), ((48, 6, 24), 3),
                                            ((48, 6, 25), 4)):
        assert lib.mk_team_parts(panels, ways, mc_panels) == want, (panels, ways, mc_panels)


@pytest.mark.parametrize("view", ["plain", "transposed A, strided B", "column-major C"])
def test_one_thread_packs_each_a_block_once_for_all_nc_blocks(view):
    # the A slab (c_src/mk_loops.h, mk_loops_slab): one thread whose N spans several NC
    # blocks packs a KC block's rows of A once, in the first NC block's ic loop, and
    # the later NC blocks read them. N = 203 in NC blocks of 48 (5 blocks, a narrow
    # last), K = 77 in KC blocks of 32 (3, a short last), m = 61 in MC blocks of 24 (a
    # partial MR panel): C within the float64 bound, and bit-identical to one NC block
    # (nc = 256: no slab), whose C tiles get the same KC blocks in the same order.
    # Also the typed path (s8s8, exact), in one KC block: past one, a module with the
    # C-stationary loops (MK_C_STATIONARY) takes those at one thread instead.
    import numpy as np
    import microkernel as mk
    from microkernel import validate
    rng = np.random.default_rng(5)
    m, n, k = 61, 203, 77
    A = rng.standard_normal((m, k)).astype(np.float32)
    B = rng.standard_normal((k, n)).astype(np.float32)
    if view == "transposed A, strided B":
        A = np.ascontiguousarray(A.T).T
        B = np.repeat(B, 2, axis=0)[::2]
    C0 = rng.standard_normal((m, n)).astype(np.float32)
    if view == "column-major C":
        C0 = np.asfortranarray(C0)
    outs = []
    for nc in (48, 256):
        C = C0.copy(order="K")
        mk.gemm(A, B, C, alpha=0.75, beta=-1.5, threads=1,
                blocking={"kc": 32, "mc": 24, "nc": nc})
        outs.append(C)
    ref, bound = validate.reference(A, B, C0, 0.75, -1.5)
    ok, ratio, _, detail = validate.check(outs[0], ref, bound)
    assert ok, detail
    assert np.array_equal(outs[0], outs[1])
    Ai = rng.integers(-128, 128, (m, k)).astype(np.int8)
    Bi = rng.integers(-128, 128, (k, n)).astype(np.int8)
    Ci = mk.gemm(Ai, Bi, threads=1, blocking={"kc": 128, "mc": 24, "nc": 48})
    assert np.array_equal(Ci.astype(np.int64), Ai.astype(np.int64) @ Bi.astype(np.int64))
