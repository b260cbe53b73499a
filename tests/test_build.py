"""The compile path: any shape on demand, cache, errors, register budget."""
import warnings

import pytest

import microkernel as mk
from microkernel import build, codegen, kernel as kmod
from microkernel.tile import TileSpec, check_budget, register_budget


def test_any_legal_name_builds_and_runs_here():
    isa = mk.probe().best_isa
    lanes = mk.tile.ISAS[isa].lanes if isa != "sve" else 1
    spec = TileSpec(isa, 3, 2 * lanes if isa != "scalar" else 3)
    k = mk.get_kernel(spec.name)
    assert k.spec == spec and k.mr == 3


@pytest.mark.parametrize("name", ["avx512_12x32", "avx512_6x64", "avx2_4x24", "scalar_3x5",
                                  "avx512_8x16_u1"])
def test_generated_sources_compile_for_any_isa(name):
    """Compiling needs no CPU support (nothing of it runs): every x86 shape builds."""
    path = kmod.compile_only(TileSpec.from_name(name))
    assert path.exists() and path.stat().st_size > 0


def test_register_budget_refuses_and_warns():
    with pytest.raises(mk.TileError, match="needs 35 vector registers.*has 32"):
        TileSpec("avx512", 16, 32)       # 32 accumulators + 2 B + 1
    with pytest.raises(mk.TileError, match="not a multiple of its 8 fp32 lanes"):
        TileSpec("avx2", 4, 12)
    b = register_budget(TileSpec("avx512", 8, 16))
    assert (b.accumulators, b.b_vectors, b.needed, b.available) == (8, 1, 10, 32)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        check_budget(TileSpec("avx2", 14, 8))     # 14 + 1 + 1 = 16 of 16
        check_budget(TileSpec("avx512", 2, 16))   # 2 accumulators < 4 x 2
    msgs = " ".join(str(x.message) for x in w)
    assert "near the limit" in msgs and "hide FMA latency" in msgs


def test_names_round_trip():
    for name in ("avx512_8x16", "sve_8x2v", "neon_8x12", "scalar_4x4", "avx2_6x16_u4"):
        assert TileSpec.from_name(name).name == name
    for bad in ("avx512_8x", "sve_8x16", "neon_8x2v", "avx512-8x16"):
        with pytest.raises(mk.TileError):
            TileSpec.from_name(bad)


def test_compile_error_shows_the_compilers_message(tmp_path, monkeypatch):
    monkeypatch.setenv("MICROKERNEL_CACHE_DIR", str(tmp_path))
    with pytest.raises(build.BuildError, match="this_is_not_c"):
        build.load_module("broken", "int f(void);", "int f(void) { return this_is_not_c; }")


def test_missing_compiler_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("MICROKERNEL_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CC", "no-such-cc-1234")
    with pytest.raises(build.BuildError, match="no-such-cc-1234.*not found"):
        build.load_module("nocc", "int f(void);", "int f(void) { return 1; }")


def test_cache_is_content_addressed(tmp_path, monkeypatch):
    monkeypatch.setenv("MICROKERNEL_CACHE_DIR", str(tmp_path))
    n0 = build.BUILD_COUNT[0]
    m1 = build.load_module("same", "int f(void);", "int f(void) { return 7; }")
    m2 = build.load_module("same", "int f(void);", "int f(void) { return 7; }")
    m3 = build.load_module("same", "int f(void);", "int f(void) { return 8; }")
    assert m1 is m2 and m1.lib.f() == 7 and m3.lib.f() == 8
    assert build.BUILD_COUNT[0] - n0 == 2
    assert len(list(tmp_path.glob("_mk_same_*.so"))) == 2


def test_isa_flags_stay_in_their_module():
    src = kmod.module_source(TileSpec("avx2", 6, 16))
    assert "-march=native" not in " ".join(kmod.COMMON_CFLAGS + TileSpec("avx2", 6, 16).info.cflags)
    assert "_mm512" not in src and "mk_ukernel_avx2_6x16" in src
    assert codegen.symbol(TileSpec("avx512", 8, 16)) == "mk_ukernel_avx512_8x16"


@pytest.mark.parametrize("name", ["avx2_4x24_u8", "avx2_6x16", "avx512_8x32_u4", "avx512_6x64",
                                  "avx512_6x48", "avx512_8x16", "neon_8x12", "scalar_3x5"])
def test_c_tile_prefetch_covers_every_line_at_any_alignment(name):
    """The micro-kernel prefetches its C tile: every row before the K loop, or on
    AVX-512 row r at k = r * k_unroll inside the loop, with every row before the loop
    when kc < MR * k_unroll (the loop would not reach the last rows). Each way, every row
    is prefetched, and at every start of a row within a 64-byte line (0..15 floats in)
    the prefetched columns touch every line the row's NR floats touch (first and last
    element alone miss the middle line of a 24-float row that starts 12 floats in)."""
    import re
    spec = TileSpec.from_name(name)
    src = codegen.generate(spec).split("_edge(")[0]   # the micro-kernel, not the edge entry
    mr, ku = spec.mr, spec.k_unroll
    spread = spec.isa == "avx512"
    head, _, loop = src.partition("int64_t k = 0;")

    def coverage(text):   # row -> prefetched columns, for prefetches of c + i * rs_c
        cols = {i: set() for i in range(mr)}
        for row, col in re.findall(r"__builtin_prefetch\(c \+ (\d+) \* rs_c(?: \+ (\d+) \* cs_c)?\)", text):
            cols[int(row)].add(int(col or 0))
        return cols

    ways = []
    if spread:
        fallback = re.search(r"if \(kc < (\d+)\) \{(.*?)\n    \}", head, re.S)
        assert fallback and int(fallback[1]) == mr * ku, "no all-rows fallback for a short K"
        ways.append(coverage(fallback[2]))
        m = re.search(r"if \(k < (\d+)\) \{.*?\n\s*const float \*cp = c \+ (?:\(k / (\d+)\)|k) \* rs_c;(.*?)\}", loop, re.S)
        assert m and int(m[1]) == mr * ku and int(m[2] or 1) == ku, "no per-row prefetch in the K loop"
        got = {int(c or 0) for c in re.findall(r"__builtin_prefetch\(cp(?: \+ (\d+) \* cs_c)?\)", m[3])}
        ways.append({i: got for i in range(mr)})   # rows k / ku for k = 0, ku, ..., (mr-1) ku
    else:
        assert "if (k <" not in src and "if (kc <" not in src   # all rows before the loop
        ways.append(coverage(head))
    for cols in ways:
        for row, got in cols.items():
            assert got, f"row {row} of {name} is not prefetched"
            for start in range(16):
                needed = {(start + j) // 16 for j in range(spec.nr)}
                assert {(start + j) // 16 for j in got} == needed, (name, row, start)


def test_an_unusable_cache_dir_is_named(tmp_path, monkeypatch):
    """A MICROKERNEL_CACHE_DIR that is a file (or not writable) gives an OSError that
    names the variable and the fix, not a bare [Errno ...]."""
    from microkernel import build
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setenv("MICROKERNEL_CACHE_DIR", str(blocker / "sub"))
    with pytest.raises(OSError, match=r"\$MICROKERNEL_CACHE_DIR .*a_file/sub.* not a usable"):
        build.cache_dir()
    monkeypatch.setenv("MICROKERNEL_CACHE_DIR", str(tmp_path / "ok"))
    assert build.cache_dir() == tmp_path / "ok" and (tmp_path / "ok").is_dir()


def test_driver_files_are_the_closure_of_driver_c():
    """Every module's hash reads build.DRIVER_FILES: a part of the driver missing from
    the list would leave stale modules in the cache after an edit to it. mk_convert.h
    comes with the typed modules' defines (codegen.module_defines), before driver.c."""
    import re
    src = build.c_src_dir()
    seen, todo = set(), ["driver.c", "mk_convert.h"]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo += re.findall(r'^\s*#\s*include\s+"([^"]+)"', (src / name).read_text(), re.M)
    assert seen == set(build.DRIVER_FILES)
    assert len(build.DRIVER_FILES) == len(set(build.DRIVER_FILES))
