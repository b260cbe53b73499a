"""aarch64 on this machine: the arm code generator, and the NEON/SVE kernels run under
qemu-aarch64 at every SVE vector length plus a NEON-only CPU (``microkernel cross``).

Needs ``aarch64-linux-gnu-gcc`` (with its static libc) and ``qemu-aarch64``; every
test that needs them is skipped with a reason naming the apt packages when they are
missing, unless ``MICROKERNEL_REQUIRE_CROSS=1`` (set it in CI: a missing tool is then
a failure, never a silent skip).

Runtime: about 30 s on 2 cores (fresh cache). The main test runs the full catalogue
(``validate.catalogue``, not ``quick``) plus the cubes M = N = K in {1, 7, 37, 129}
for the built-in tiles at 128..2048 bits and on the NEON-only CPU; the user-tile
test uses the quick catalogue at 128 and 384 bits, the SVE edge test its own case
list at 128, 384 and 2048 bits.
"""
import argparse
import json
import os
import pathlib
import re
import subprocess

import pytest

from microkernel import codegen, cross, kernel as mkkernel
from microkernel.codegen import arm
from microkernel import registry
from microkernel.tile import TileSpec
from microkernel.validate import Case

ROOT = pathlib.Path(__file__).resolve().parents[1]
SPECS = [s for s in registry.builtin(arch="aarch64") if s.isa != "scalar"]
#: non-built-in shapes: every A-load grouping of the NEON emitter (q, q+d, q+s,
#: d+s, s) and SVE tiles from 1x1v to 3x4v, other unrolls
USER_TILES = ["neon_6x8", "neon_5x16", "neon_3x4_u1", "neon_1x8", "sve_3x4v",
              "sve_1x1v", "sve_5x2v_u3"]


def _tools():
    try:
        return cross.find_tools()
    except cross.CrossToolsMissing as exc:
        return exc


TOOLS = _tools()
needs_tools = pytest.mark.skipif(
    isinstance(TOOLS, Exception),
    reason=f"aarch64 cross tools missing: apt-get install {' '.join(cross.APT_PACKAGES)}")


def test_cross_tools_present_when_required():
    if os.environ.get("MICROKERNEL_REQUIRE_CROSS", "") in ("", "0"):
        pytest.skip("MICROKERNEL_REQUIRE_CROSS not set")
    assert not isinstance(TOOLS, Exception), str(TOOLS)


# -- arm code generation (no tools needed) ---------------------------------------------

def test_builtin_aarch64_tiles_are_registered():
    names = {s.name for s in SPECS}
    assert names == {"neon_8x12", "sve_8x2v"}
    assert set(cross.DEFAULT_KERNELS) == names


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_committed_builtin_matches_generator(spec):
    path = ROOT / "c_src" / "ukernels" / f"{spec.file_stem}.c"
    assert path.exists(), "run `python -m microkernel.codegen`"
    assert path.read_text() == codegen.generate(spec)


def test_sve_source_is_vector_length_agnostic():
    src = re.sub(r"/\*.*?\*/", "", codegen.generate(TileSpec("sve", 8, 2)), flags=re.S)
    assert "-msve-vector-bits" not in src and "__ARM_FEATURE_SVE_BITS" not in src
    assert "svcntw()" in src
    # sizeless types are never array elements: every accumulator is a named variable
    assert not re.search(r"svfloat32_t\s+\w+\s*\[", src)
    assert len(set(re.findall(r"\bc\d+_\d+\b", src))) == 8 * 2
    # the edge entry point: predicates for N, a row count for M
    assert "mk_ukernel_sve_8x2v_edge(int64_t m, int64_t n" in src
    assert src.count("svwhilelt_b32_s64") == 2
    assert "if (m <= 7) return;" in src
    assert arm.nr_expr(TileSpec("sve", 8, 2)) == "(int64_t)(2 * svcntw())"
    assert arm.edge_symbol(TileSpec("sve", 8, 2)) == "mk_ukernel_sve_8x2v_edge"
    assert arm.edge_symbol(TileSpec("neon", 8, 12)) == "NULL"
    assert "svcntw()" in arm.peak("sve")


def test_neon_a_groups_never_read_past_mr():
    for mr in range(1, 17):
        groups = arm._neon_a_groups(mr)
        assert sum(rows for _, _, rows in groups) == mr
        assert [first for _, first, _ in groups] == sorted(first for _, first, _ in groups)
        assert all(first + rows <= mr for _, first, rows in groups)


def test_missing_tools_error_names_apt_packages():
    with pytest.raises(cross.CrossToolsMissing) as ei:
        cross.find_tools(cc="no-such-aarch64-gcc-xyz")
    for pkg in cross.APT_PACKAGES:
        assert pkg in str(ei.value)
    with pytest.raises(cross.CrossToolsMissing, match="qemu-user"):
        cross.find_tools(cc="gcc", qemu="no-such-qemu-xyz")


# -- the generated sources compile with the cross compiler ------------------------------

def _cross_cc(src: str, flags, tmp_path, name):
    f = tmp_path / f"{name}.c"
    f.write_text(src)
    cmd = [TOOLS.cc, *flags, f"-I{ROOT / 'c_src'}", "-c", str(f), "-o", str(tmp_path / f"{name}.o")]
    assert not any("msve-vector-bits" in x for x in cmd)
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, f"{' '.join(cmd)}\n{res.stderr}"
    return tmp_path / f"{name}.o"


@needs_tools
@pytest.mark.parametrize("name", [s.name for s in SPECS] + USER_TILES)
def test_generated_source_compiles_with_cross_compiler(name, tmp_path):
    """The micro-kernel alone (-Wall -Wextra -Werror), and the whole kernel module
    source that `sweep`/`get_kernel` compile on an Arm host (micro-kernel + peak +
    driver + timing + glue, kernel.COMMON_CFLAGS), with only the ISA's flags."""
    spec = TileSpec.from_name(name)
    flags = ["-O2", "-std=gnu11", "-Wall", "-Wextra", "-Werror", *spec.info.cflags]
    _cross_cc(codegen.generate(spec), flags, tmp_path, "ukernel")
    _cross_cc(mkkernel.module_source(spec),
              ["-std=gnu11", *mkkernel.COMMON_CFLAGS, "-Werror", *spec.info.cflags],
              tmp_path, "module")


@needs_tools
def test_builtin_inner_loops_do_not_spill(tmp_path):
    """The docstring's claim: 24 accumulators + 3 B + 2 A vectors fit the 32
    registers, no stack traffic inside the K loops (GCC -O2 and -O3), for the
    built-in and for unrolled variants."""
    for spec in (TileSpec("neon", 8, 12), TileSpec("neon", 8, 12, k_unroll=2),
                 TileSpec("neon", 8, 12, k_unroll=4), TileSpec("sve", 8, 2),
                 TileSpec("sve", 8, 2, k_unroll=4)):
        _assert_no_spill_in_k_loop(spec, tmp_path)


def _assert_no_spill_in_k_loop(spec, tmp_path):
    f = tmp_path / "k.c"
    f.write_text(codegen.generate(spec))
    for opt in ("-O2", "-O3"):
        asm = subprocess.run([TOOLS.cc, opt, *spec.info.cflags, "-S", "-o", "-", str(f)],
                             capture_output=True, text=True, check=True).stdout
        lines = asm.splitlines()
        labels = {ln[:-1]: i for i, ln in enumerate(lines) if re.match(r"^\.L\d+:$", ln)}
        spans = []
        for i, ln in enumerate(lines):        # backward branches close the loops
            m = re.match(r"\s+(?:b\.?\w*|cbn?z|tbn?z)\s.*?(\.L\d+)$", ln)
            if m and m.group(1) in labels and labels[m.group(1)] < i:
                body = lines[labels[m.group(1)]:i + 1]
                if (sum("fmla" in b for b in body) >= spec.mr * spec.vectors_per_row
                        and not any("ret" in b for b in body)):
                    spans.append((labels[m.group(1)], i))
        # innermost FMA loops only (a branch back over a whole region is not a K loop)
        inner = [(a, b) for a, b in spans
                 if not any((a, b) != (c, d) and a <= c and d <= b for c, d in spans)]
        loops = [lines[a:b + 1] for a, b in inner]
        assert loops, f"{spec.name}: no FMA loop found at {opt}"
        for body in loops:
            assert not [b for b in body if "[sp" in b], f"{spec.name}: spill in the K loop at {opt}"


@needs_tools
@pytest.mark.parametrize("isa,cpu,lanes", [
    ("neon", "cortex-a72", 4), ("sve", "max,sve-default-vector-length=32", 8),
    ("sve", "max,sve-default-vector-length=256", 64)])
def test_peak_loop_counts_flops_at_the_run_time_vl(isa, cpu, lanes, tmp_path):
    """Not a timing: the peak loop runs and counts 2 * lanes * chains flops per
    iteration with the lanes of the VL it runs at."""
    main = ('#include <stdio.h>\n#include <stdint.h>\ndouble mk_fma_peak(int64_t, double *);\n'
            'int main(void) { double f = 0; mk_fma_peak(1000, &f); printf("%.0f\\n", f); '
            'return 0; }\n')
    (tmp_path / "peak.c").write_text(codegen.generate_peak(isa))
    (tmp_path / "main.c").write_text(main)
    exe = tmp_path / "peak"
    subprocess.run([TOOLS.cc, "-O2", "-Wall", "-Werror", *TileSpec.from_name(
        "sve_1x1v" if isa == "sve" else "neon_1x4").info.cflags, "-c", str(tmp_path / "peak.c"),
        "-o", str(tmp_path / "peak.o")], check=True)
    subprocess.run([TOOLS.cc, "-static", "-O2", str(tmp_path / "main.c"), str(tmp_path / "peak.o"),
                    "-o", str(exe)], check=True)
    out = subprocess.run([TOOLS.qemu, "-cpu", cpu, str(exe)], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert float(out) == 2 * lanes * arm.PEAK_CHAINS[isa] * 1000


# -- cross validation under qemu --------------------------------------------------------

@pytest.fixture(scope="module")
def full_report():
    """The default `microkernel cross`: full catalogue, SVE at 128..2048 bits and the
    NEON-only CPU."""
    return cross.cross_validate(timeout=300)


@needs_tools
def test_cross_passes_at_every_vl_and_on_neon_only_cpu(full_report):
    rep = full_report
    problems = [(r.label, r.errors, {k: v.failures[:3] for k, v in r.kernels.items() if v.failures})
                for r in rep.runs if not r.ok]
    assert rep.ok, problems
    assert [r.label for r in rep.runs] == [f"sve-{b}" for b in cross.DEFAULT_VLS] + ["neon-only"]


@needs_tools
def test_every_kernel_executed_cases_everywhere_it_should(full_report):
    """Zero cases for a kernel that a CPU must cover is a failure; on the NEON-only
    CPU the SVE tile must be refused (never executed), not silently skipped."""
    for r in full_report.runs:
        for name, k in r.kernels.items():
            if k.isa == "sve" and r.requested_vl_bits is None:
                assert k.cases == 0 and k.refused > 0, (r.label, name)
            else:
                assert k.cases > 0, f"{name} executed zero cases on {r.label}"
                assert k.passed == k.cases, (r.label, name, k.failures[:3])


@needs_tools
def test_observed_vl_probe_and_run_time_nr(full_report):
    for r in full_report.runs:
        if r.requested_vl_bits:
            assert r.observed_vl_bits == r.requested_vl_bits
            assert r.probe_vl_bits == r.requested_vl_bits
            assert r.chosen_isa == "sve" and "sve" in r.probe_isas
            assert r.kernels["sve_8x2v"].nr == 2 * r.requested_vl_bits // 32
        else:
            assert r.chosen_isa == "neon" and "sve" not in r.probe_isas
            assert r.observed_vl_bits is None and r.probe_vl_bits is None
            assert "MICROKERNEL_ISA=sve" in r.forced_sve_error
            assert "cannot run sve" in r.forced_sve_error
        assert r.kernels["neon_8x12"].nr == 12


@needs_tools
def test_catalogue_at_each_vl_covers_every_remainder_and_the_cubes(full_report):
    spec = TileSpec("sve", 8, 2)
    for r in full_report.runs:
        if not r.requested_vl_bits:
            continue
        nr = spec.nr_at(r.requested_vl_bits)
        cases = cross.cases_for(spec, r.requested_vl_bits)
        assert r.kernels["sve_8x2v"].cases == len(cases)
        n_rem = {c.n % nr for c in cases if c.m and c.n}
        m_rem = {c.m % spec.mr for c in cases if c.m and c.n}
        assert n_rem >= set(range(nr)) and m_rem >= set(range(spec.mr))
        cubes = {c.m for c in cases if c.label.startswith("cube")}
        assert cubes == set(cross.CUBES)
        assert all(s % nr for s in cubes if s > 1)     # non-multiples of the VL


def _sve_edge_cases(spec, bits):
    """Edge tiles straight at the predicates: every m in 1..MR, n around each vector
    boundary, beta 0 with NaN in C (must not survive) and beta != 0, unit-stride
    and general-stride C (cs_c != 1), K = 0, 1 and a K past the unroll."""
    if bits is None:
        return []
    vl = bits // 32
    nr = spec.nr_at(bits)
    ns = sorted({1, vl - 1, vl, vl + 1, nr - 1, nr + 1, 2 * nr - 1} - {0})
    out = []
    for m in range(1, spec.mr + 1):
        for n in ns:
            for k in (0, 1, spec.k_unroll + 3):
                for lay, beta, nan in (("c", 0.0, True), ("c", 0.5, False), ("s", 0.0, True),
                                       ("s", -1.0, False)):
                    out.append(Case(f"edge_m{m}_n{n}_k{k}_{lay}_b{beta}", m, n, k,
                                    alpha=1.5, beta=beta, c_layout=lay, nan_c=nan))
    return out


@needs_tools
def test_sve_edge_tiles_at_three_vls():
    """The predicated edge entry point at 128, 384 (not a power of two: legal for SVE
    and accepted by qemu) and 2048 bits; no NEON-only run."""
    spec = TileSpec("sve", 8, 2)
    rep = cross.cross_validate([spec], vls=(128, 384, 2048), neon_cpu=None, timeout=300,
                               cases_fn=_sve_edge_cases)
    for r in rep.runs:
        k = r.kernels[spec.name]
        assert r.ok, (r.label, r.errors, k.failures[:5])
        assert k.cases == len(_sve_edge_cases(spec, r.requested_vl_bits)) > 0


@needs_tools
def test_user_tiles_cross():
    """Non-built-in shapes through the same generator and harness, quick catalogue,
    at 128 and 384 bits and on the NEON-only CPU."""
    rep = cross.cross_validate(USER_TILES, vls=(128, 384), quick=True, timeout=300)
    for r in rep.runs:
        assert r.ok, (r.label, r.errors,
                      {n: k.failures[:3] for n, k in r.kernels.items() if k.failures})
        for name, k in r.kernels.items():
            if k.isa == "sve" and r.requested_vl_bits is None:
                assert k.refused > 0 and k.cases == 0
            else:
                assert k.cases > 0, f"{name} executed zero cases on {r.label}"


@needs_tools
def test_cli_json_and_table(capsys):
    parser = cross.add_cross_arguments(argparse.ArgumentParser())
    args = parser.parse_args(["--vl", "256", "--quick", "--json"])
    assert cross.run_cross(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] and [r["label"] for r in doc["runs"]] == ["sve-256", "neon-only"]
    assert doc["runs"][0]["observed_vl_bits"] == 256
    assert doc["runs"][0]["kernels"]["sve_8x2v"]["cases"] > 0
    args = parser.parse_args(["--vl", "128", "--quick", "--neon-cpu", "none"])
    assert cross.run_cross(args) == 0
    out = capsys.readouterr().out
    assert "sve-128" in out and "neon_8x12" in out and "PASS" in out
    with pytest.raises(SystemExit):
        parser.parse_args(["--vl", "200"])


def test_cli_reports_missing_tools(monkeypatch, capsys):
    monkeypatch.setenv("MICROKERNEL_CROSS_CC", "no-such-aarch64-gcc-xyz")
    args = cross.add_cross_arguments(argparse.ArgumentParser()).parse_args(["--quick"])
    assert cross.run_cross(args) == 2
    err = capsys.readouterr().err
    assert "apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user" in err


@needs_tools
def test_non_aarch64_tile_is_refused():
    with pytest.raises(cross.TileError, match="aarch64"):
        cross.build_harness(["avx2_6x16"])
