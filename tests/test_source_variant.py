"""A tile's micro-kernel replaced by a C file of the user's (``get_kernel(name,
source=)``, ``microkernel validate --source``, ``microkernel compare`` NAME@FILE): built
around the same driver, its own module, checked by the edge catalogue like a built-in,
and a clear error when the file lacks the tile's symbols. Uses scalar_4x4, which runs on
every machine."""
import pathlib
import sys

import numpy as np
import pytest

import microkernel as mk
from microkernel import validate
from microkernel.build import BuildError
from microkernel.cli import main

ROOT = pathlib.Path(__file__).resolve().parents[1]
GENERATED = (ROOT / "c_src" / "ukernels" / "scalar_4x4.c").read_text()
# the beta == 0 branch forgets element (3, 3) of the C tile
LAST_STORE = "            *(c + 3 * rs_c + 3) = c3_3;\n"


def _variant(tmp_path, text, name="variant.c"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_correct_variant_is_its_own_module_and_passes(tmp_path):
    path = _variant(tmp_path, "/* an edited copy */\n" + GENERATED)
    k = mk.get_kernel("scalar_4x4", source=path)
    builtin = mk.get_kernel("scalar_4x4")
    assert k.source == str(path) and k.label == f"scalar_4x4@{path}"
    assert k.module is not builtin.module and (k.mr, k.nr) == (4, 4)
    assert all(r.ok for r in validate.run_catalogue(k, quick=True))
    rng = np.random.default_rng(1)
    A = rng.standard_normal((37, 21), dtype=np.float32)
    B = rng.standard_normal((21, 19), dtype=np.float32)
    C = mk.gemm(A, B, kernel=k)
    ref, bound = validate.reference(A, B, np.zeros_like(C), 1.0, 0.0)
    assert validate.check(C, ref, bound)[0]


def test_a_broken_variant_fails_the_catalogue(tmp_path):
    assert GENERATED.count(LAST_STORE) == 1
    k = mk.get_kernel("scalar_4x4", source=_variant(tmp_path, GENERATED.replace(LAST_STORE, "")))
    bad = [r for r in validate.run_catalogue(k, quick=True) if not r.ok]
    assert bad and all(r.kernel == k.label for r in bad)


def test_a_source_without_the_symbol_is_a_clear_error(tmp_path):
    text = GENERATED.replace("mk_ukernel_scalar_4x4(", "my_kernel(")
    with pytest.raises(mk.TileError, match="does not define mk_ukernel_scalar_4x4"):
        mk.get_kernel("scalar_4x4", source=_variant(tmp_path, text))
    # a prototype, a comment or a call is not a definition
    declared = ("#include <stdint.h>\n/* mk_ukernel_scalar_4x4(kc, ...) */\n"
                "void mk_ukernel_scalar_4x4(int64_t kc, const float *alpha, const float *a,"
                " const float *b, const float *beta, float *c, int64_t rs_c, int64_t cs_c);\n")
    with pytest.raises(mk.TileError, match="does not define mk_ukernel_scalar_4x4"):
        mk.get_kernel("scalar_4x4", source=_variant(tmp_path, declared, "declared.c"))
    with pytest.raises(OSError):
        mk.get_kernel("scalar_4x4", source=tmp_path / "missing.c")


def test_a_module_that_does_not_load_is_a_build_error(tmp_path):
    # defined, compiles (a shared object may leave symbols undefined), fails to import
    text = GENERATED.replace("#include <stdint.h>\n",
                             "#include <stdint.h>\nvoid mk_helper_nowhere(void);\n", 1)
    text = text.replace("    if (cs_c == 1) {", "    mk_helper_nowhere();\n    if (cs_c == 1) {", 1)
    with pytest.raises(BuildError, match="does not load.*mk_helper_nowhere"):
        mk.get_kernel("scalar_4x4", source=_variant(tmp_path, text))


@pytest.mark.skipif(not mk.probe().supports("avx2"), reason="needs a CPU with AVX2")
def test_the_edge_entry_point_is_optional(tmp_path):
    """A source without the tile's edge entry point (optional in c_src/mk_ukernel.h):
    the module's descriptor says NULL and the driver computes the edge tiles in its
    buffer; the catalogue (every remainder) passes. Its edge entry point broken instead
    fails it, so the edge tiles do go through the source's entry point when it has one."""
    src = (ROOT / "c_src" / "ukernels" / "avx2_4x24_u8.c").read_text()
    text = src.replace("mk_ukernel_avx2_4x24_u8_edge(", "my_edge(")
    k = mk.get_kernel("avx2_4x24_u8", source=_variant(tmp_path, text))
    results = validate.run_catalogue(k, quick=True)
    assert results and all(r.ok for r in results), [r.case.label for r in results if not r.ok]
    head, sep, tail = src.partition("mk_ukernel_avx2_4x24_u8_edge(")
    assert sep and "{\n" in tail
    broken = head + sep + tail.replace("{\n", "{\n    if (m > 1) return;\n", 1)
    k = mk.get_kernel("avx2_4x24_u8", source=_variant(tmp_path, broken, "broken_edge.c"))
    assert any(not r.ok for r in validate.run_catalogue(k, quick=True))


def test_a_definition_counts_only_outside_comments_and_if_0():
    from microkernel.kernel import defines
    sym = "mk_ukernel_x_edge"
    assert defines("void mk_ukernel_x_edge(int64_t m, /* n */ int64_t n)\n{\n}\n", sym)
    assert defines("#if 0\nold\n#endif\nvoid mk_ukernel_x_edge(int a) { }", sym)
    for dead in ("/* void mk_ukernel_x_edge(int a) { } */", "// void mk_ukernel_x_edge(int a) { }",
                 "#if 0\nvoid mk_ukernel_x_edge(int a) {\n}\n#endif\n",
                 "void mk_ukernel_x_edge(int a);", "x = mk_ukernel_x_edge(1);"):
        assert not defines(dead, sym), dead


def test_a_source_may_add_an_edge_entry_point_the_generated_tile_lacks(tmp_path):
    """scalar_4x4's generated kernel has no edge entry point; a source that defines one
    gets it called for the edge tiles (a planted bug in it fails the catalogue), and a
    commented-out one is not taken for a definition (the module builds and passes)."""
    from microkernel.commands.template import EDGE, render
    edge = EDGE.replace("@NAME@", "scalar_4x4")
    good = render("scalar_4x4") + edge
    k = mk.get_kernel("scalar_4x4", source=_variant(tmp_path, good, "edge_good.c"))
    assert all(r.ok for r in validate.run_catalogue(k, quick=True))
    assert "{\n    float acc" in edge
    bad = render("scalar_4x4") + edge.replace("{\n    float acc", "{\n    if (m > 1) return;\n    float acc", 1)
    k = mk.get_kernel("scalar_4x4", source=_variant(tmp_path, bad, "edge_bad.c"))
    assert any(not r.ok for r in validate.run_catalogue(k, quick=True))
    commented = render("scalar_4x4") + "/*" + edge.replace("*/", "* /") + "*/\n"
    k = mk.get_kernel("scalar_4x4", source=_variant(tmp_path, commented, "edge_commented.c"))
    assert all(r.ok for r in validate.run_catalogue(k, quick=True))


def test_validate_cli_takes_a_source(tmp_path, capfd):
    """(The catalogue runs in a child process: capfd sees its output.)"""
    good = _variant(tmp_path, GENERATED, "good.c")
    broken = _variant(tmp_path, GENERATED.replace(LAST_STORE, ""), "broken.c")
    assert main(["validate", "--kernel", "scalar_4x4", "--source", str(good), "--quick"]) == 0
    assert main(["validate", "--kernel", "scalar_4x4", "--source", str(broken), "--quick"]) == 1
    assert f"scalar_4x4@{broken}" in capfd.readouterr().out
    for argv in (["--kernel", "scalar_4x4", "--kernel", "scalar_4x4"], []):
        assert main(["validate", *argv, "--source", str(good)]) == 2
        assert "exactly one --kernel" in capfd.readouterr().err
    assert main(["validate", "--kernel", "scalar_4x4", "--source", str(tmp_path / "no.c")]) == 2
    assert "No such file" in capfd.readouterr().err


# a micro-kernel of the scalar_4x4 tile that writes through a null pointer, and one that
# never returns
SEGV = ("#include <stdint.h>\nvoid mk_ukernel_scalar_4x4(int64_t kc, const float *restrict alpha, "
        "const float *restrict a, const float *restrict b, const float *restrict beta, "
        "float *restrict c, int64_t rs_c, int64_t cs_c) { *(volatile int *)0 = 1; }\n")
LOOP = SEGV.replace("*(volatile int *)0 = 1;", "for (volatile int i = 0;; ++i) {}")


def test_a_crashing_variant_is_reported_not_suffered(tmp_path, capfd):
    """A user's micro-kernel first runs in a child process: validate, compare and bench
    say that it crashed (and with which signal) and exit 1; this process lives on."""
    segv = _variant(tmp_path, SEGV, "segv.c")
    assert main(["validate", "--kernel", "scalar_4x4", "--source", str(segv), "--quick"]) == 1
    assert "crashed (SIGSEGV)" in " ".join(capfd.readouterr().err.split())
    for argv in (["compare", "--kernels", f"scalar_4x4;scalar_4x4@{segv}"],
                 ["bench", "--kernel", f"scalar_4x4@{segv}"]):
        assert main([*argv, "--sizes", "16", "--rounds", "2"]) == 1
        assert "crashed (SIGSEGV)" in " ".join(capfd.readouterr().out.split())


def test_a_variant_that_never_returns_is_stopped(tmp_path, monkeypatch, capfd):
    monkeypatch.setattr("microkernel.commands.common.SOURCE_CHILD_TIMEOUT", 20.0)
    loop = _variant(tmp_path, LOOP, "loop.c")
    assert main(["validate", "--kernel", "scalar_4x4", "--source", str(loop), "--quick"]) == 1
    assert "did not finish in 20 s" in " ".join(capfd.readouterr().err.split())


def test_compare_refuses_to_time_a_broken_variant(tmp_path, monkeypatch, capsys):
    from microkernel.cli import main
    broken = _variant(tmp_path, GENERATED.replace(LAST_STORE, ""))
    timed = []
    monkeypatch.setattr("microkernel.timing.Rounds.round", lambda *a, **k: timed.append(1))
    assert main(["compare", "--kernels", f"scalar_4x4;scalar_4x4@{broken}", "--sizes", "16",
                 "--rounds", "2"]) == 1
    assert "edge-catalogue case" in " ".join(capsys.readouterr().out.split())
    assert not timed


def test_bench_refuses_to_time_a_broken_variant(tmp_path, monkeypatch, capsys):
    """bench, like compare, runs a user's micro-kernel through the catalogue before its
    L1 race and exits 1 (a validation failure) without timing anything."""
    from microkernel.cli import main
    broken = _variant(tmp_path, GENERATED.replace(LAST_STORE, ""))
    monkeypatch.setattr("microkernel.timing.Rounds.round",
                        lambda *a, **k: pytest.fail("timed a broken variant"))
    assert main(["bench", "--kernel", f"scalar_4x4@{broken}", "--sizes", "16",
                 "--rounds", "2"]) == 1
    assert "edge-catalogue case" in " ".join(capsys.readouterr().out.split())


def test_compare_names_a_missing_source_as_a_usage_error(tmp_path, capsys):
    from microkernel.cli import main
    assert main(["compare", "--kernels", f"scalar_4x4@{tmp_path / 'no.c'}", "--sizes", "16"]) == 2
    assert "No such file" in capsys.readouterr().err


def test_asm_names_a_source_without_the_entry_point(tmp_path, capsys):
    """asm --source checks the contract's symbol as validate does: one line, exit 2,
    no compiler log."""
    from microkernel.cli import main
    other = _variant(tmp_path, GENERATED.replace("mk_ukernel_scalar_4x4", "mk_ukernel_mine"))
    assert main(["asm", "scalar_4x4", "--source", str(other), "--no-measure"]) == 2
    err = capsys.readouterr().err
    assert f"{other} does not define mk_ukernel_scalar_4x4" in err
    assert len(err.strip().splitlines()) == 1
