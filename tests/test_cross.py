"""aarch64 on this machine: the arm code generator, and the NEON/SVE kernels run under
qemu-aarch64 at every SVE vector length plus a NEON-only CPU (``microkernel cross``).

Needs ``aarch64-linux-gnu-gcc`` (with its static libc) and ``qemu-aarch64``; every
test that needs them is skipped with a reason naming the apt packages when they are
missing, unless ``MICROKERNEL_REQUIRE_CROSS=1`` (set it in CI: a missing tool is then
a failure, never a silent skip).

Runtime: about 3 minutes on 2 cores (fresh cache). The main test runs the full
catalogue (``validate.catalogue``, not ``quick``; the typed vector-length-agnostic tiles
quick above 512 bits, cross.configs.QUICK_TYPED_ABOVE_BITS) plus the cubes M = N = K in
{1, 7, 37, 129} for every built-in aarch64 tile, fp32 and typed (issue 22), at SVE and
SME lengths 128..2048 bits, on the NEON-only CPU and on the CPUs that lack the typed
extensions (cortex-a76, a64fx, max,sme=off); the user-tile test uses the quick catalogue
at 128 and 384 bits, the SVE edge test its own case list at 128, 384 and 2048 bits.
"""
import argparse
import json
import os
import pathlib
import re
import subprocess

import pytest

from microkernel import analysis, codegen, cross, kernel as mkkernel
from microkernel.codegen import arm
from microkernel import registry
from microkernel.commands import cross as cross_cmd
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
    assert {"neon_8x12", "sve_8x2v", "neondot_s8s8_8x12", "neoni8mm_s8s8_8x8", "neonbf16_8x8",
            "neonfp16_8x24", "neonfp16_f16_8x8", "svei8mm_s8s8_8x2v", "svebf16_8x2v",
            "sme_2x2v", "sme_bf16_2x2v", "sme_f16_2x2v"} <= names
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
    from microkernel.codegen.arm_common import neon_a_groups
    for lanes in (4, 8):                                 # fp32, fp16 vectors
        for mr in range(1, 17):
            groups = neon_a_groups(mr, lanes)
            assert sum(rows for _, _, rows in groups) == mr
            assert [first for _, first, _ in groups] == sorted(first for _, first, _ in groups)
            assert all(first + rows <= mr for _, first, rows in groups)
            # full vectors first, at most one half vector, then single rows
            assert [k for k, _, _ in groups] == sorted((k for k, _, _ in groups), key="qds".index)
            assert [k for k, _, _ in groups].count("d") <= 1


def test_missing_tools_error_names_apt_packages():
    with pytest.raises(cross.CrossToolsMissing) as ei:
        cross.find_tools(cc="no-such-aarch64-gcc-xyz")
    for pkg in cross.APT_PACKAGES:
        assert pkg in str(ei.value)
    with pytest.raises(cross.CrossToolsMissing, match="qemu-user"):
        cross.find_tools(cc="gcc", qemu="no-such-qemu-xyz")


def test_harness_kernel_list_is_the_projects_xmacro_list():
    """The harness reads the X-macro list codegen.kernel_list writes (the format of
    c_src/ukernels/mk_kernels.inc), named by -DMK_KERNEL_LIST; one glue file per tile
    with the one descriptor emitter's function."""
    files, objects = cross.harness_sources(SPECS)
    lst = files["mk_harness_kernels.inc"]
    assert "MK_KERNEL(neon_8x12, neon, 8, 12, 3, 1, 0)" in lst.splitlines()
    assert "MK_KERNEL(sve_8x2v, sve, 8, 0, 2, 1, 1)" in lst.splitlines()
    assert sum(line.startswith("MK_KERNEL(") for line in lst.splitlines()) == len(SPECS)
    types = files["mk_harness_types.inc"]
    assert "MK_HTYPES(neondot_u8s8_8x12, u8s8, mk_hdriver_" in types
    assert "offsetof(mk_cpu_features, i8mm))" in types
    assert "MK_HTYPES(neon_8x12, f32, mk_hdriver_f32, 4, 4, 4, -1)" in types
    # one driver object per distinct panel layout, renamed
    drivers = [name for name in files if name.startswith("driver_")]
    assert len(drivers) == len({codegen.layout(s) for s in SPECS if codegen.layout(s).typed})
    assert all("#define MK_DRIVER_NAME mk_gemm_driver_" in files[d] for d in drivers)
    harness_flags = [flags for name, flags in objects if name == "harness.c"]
    assert ('-DMK_KERNEL_LIST="mk_harness_kernels.inc"',
            '-DMK_HARNESS_TYPES="mk_harness_types.inc"') in harness_flags
    assert "void mk_harness_desc_neon_8x12(mk_ukernel_desc *d)" in files["glue_neon_8x12.c"]
    src = (ROOT / "c_src" / "harness.c").read_text()
    assert "#include MK_KERNEL_LIST" in src and '"ukernels/mk_kernels.inc"' in src
    assert "mk_harness_kernels.h" not in src and "MK_HARNESS_KERNEL" not in src


@needs_tools
def test_harness_with_the_default_list_keeps_only_linked_kernels(tmp_path):
    """harness.c without -DMK_KERNEL_LIST includes the committed list of every
    built-in (x86 ones too); descriptors are weak, so a harness linked with only the
    neon_8x12 glue lists only neon_8x12 (and runs it on a NEON-only CPU)."""
    spec = TileSpec.from_name("neon_8x12")
    files, _ = cross.harness_sources([spec])
    src_dir = ROOT / "c_src"
    base = [TOOLS.cc, *cross.BASE_CFLAGS, f"-I{src_dir}", "-c"]
    (tmp_path / "glue.c").write_text(files["glue_neon_8x12.c"])
    objs = []
    for src, flags in ((src_dir / "harness.c", ()), (src_dir / "probe.c", ()),
                       (src_dir / "driver.c", ("-fopenmp",)),
                       (tmp_path / "glue.c", spec.cflags)):
        obj = tmp_path / f"{len(objs)}.o"
        subprocess.run([*base, *flags, str(src), "-o", str(obj)], check=True)
        objs.append(str(obj))
    exe = tmp_path / "harness"
    subprocess.run([TOOLS.cc, "-static", "-fopenmp", *objs, "-o", str(exe)], check=True)
    out = subprocess.run([TOOLS.qemu, "-cpu", "cortex-a72", str(exe), "--info"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    kernels = [line for line in out.splitlines() if line.startswith("kernel ")]
    assert kernels == ["kernel neon_8x12 isa=neon types=f32 mr=8 nr=12 runnable=1"]


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
    flags = ["-O2", "-std=gnu11", "-Wall", "-Wextra", "-Werror", *spec.cflags]
    _cross_cc(codegen.generate(spec), flags, tmp_path, "ukernel")
    _cross_cc(mkkernel.module_source(spec),
              ["-std=gnu11", *mkkernel.COMMON_CFLAGS, "-Werror", *spec.cflags],
              tmp_path, "module")


@needs_tools
def test_builtin_inner_loops_do_not_spill(tmp_path):
    """The docstring's claim: 24 accumulators + 3 B + 2 A vectors fit the 32
    registers, no stack traffic inside the K loops, for the built-in and for unrolled
    variants: at -O2 (how the cross harness builds its glue) and as `microkernel asm`
    builds them (the kernel module's flags, -O3), read by microkernel.analysis."""
    for spec in (TileSpec("neon", 8, 12), TileSpec("neon", 8, 12, k_unroll=2),
                 TileSpec("neon", 8, 12, k_unroll=4), TileSpec("sve", 8, 2),
                 TileSpec("sve", 8, 2, k_unroll=4)):
        _assert_no_spill_in_k_loops(spec, tmp_path)
        assert analysis.spills(spec) == 0, f"{spec.name}: spill in the K loop (asm build)"


def _assert_no_spill_in_k_loops(spec, tmp_path):
    """Every innermost loop with a k step's FMAs (the unrolled main loop and the
    remainder loop) is free of stack accesses, at -O2 and -O3."""
    for opt in ("-O2", "-O3"):
        obj = _cross_cc(codegen.generate(spec), [opt, *spec.cflags], tmp_path,
                        f"k{opt}")
        asm = analysis.disassemble_object(obj, codegen.symbol(spec), "aarch64")
        loops = [lp for lp, innermost in analysis.all_loops(asm, spec.k_unroll, "aarch64")
                 if innermost and lp.fmas >= spec.mr * spec.vectors_per_row]
        assert loops, f"{spec.name}: no FMA loop found at {opt}"
        for lp in loops:
            assert lp.spills == 0, f"{spec.name}: spill in the K loop at {opt}:\n{lp.asm}"


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
    """The default `microkernel cross`: every built-in aarch64 tile, SVE and SME at
    128..2048 bits, the NEON-only CPU and the CPUs without the typed extensions."""
    return cross.cross_validate(timeout=600)


CONFIGS = {c.label: c for c in cross.cpu_configs()}


@needs_tools
def test_cross_passes_at_every_vl_and_on_neon_only_cpu(full_report):
    rep = full_report
    problems = [(r.label, r.errors, {k: v.failures[:3] for k, v in r.kernels.items() if v.failures})
                for r in rep.runs if not r.ok]
    assert rep.ok, problems
    assert [r.label for r in rep.runs] == ([f"sve-{b}" for b in cross.DEFAULT_VLS] + ["neon-only"]
                                           + [c.label for c in cross.REFUSAL_CPUS])


@needs_tools
def test_every_kernel_executed_cases_everywhere_it_should(full_report):
    """Zero cases for a kernel that a CPU must cover is a failure; where the CPU lacks
    the kernel's ISA or the feature its types need (the SVE and typed tiles on the
    NEON-only CPU, SUDOT and FMLAL on cortex-a76, SVE I8MM on a64fx, SME with sme=off)
    it must be refused (never executed), not silently skipped."""
    refused_somewhere = set()
    for r in full_report.runs:
        cfg = CONFIGS[r.label]
        for name, k in r.kernels.items():
            if not cfg.runs(TileSpec.from_name(name)):
                assert k.cases == 0 and k.refused > 0, (r.label, name)
                refused_somewhere.add(name)
            else:
                assert k.cases > 0, f"{name} executed zero cases on {r.label}"
                assert k.passed == k.cases, (r.label, name, k.failures[:3])
    by = {r.label: r for r in full_report.runs}
    assert by["dot-fp16"].kernels["neondot_s8s8_8x12"].passed > 0
    assert by["dot-fp16"].kernels["neondot_u8s8_8x12"].refused > 0        # SUDOT: I8MM
    assert by["dot-fp16"].kernels["neonfp16_f16_8x8"].refused > 0         # FMLAL: FHM
    assert by["a64fx"].kernels["sve_8x2v"].passed > 0
    assert by["a64fx"].kernels["svei8mm_s8s8_8x2v"].refused > 0
    assert by["sme-off"].kernels["sme_2x2v"].refused > 0
    assert refused_somewhere == {s.name for s in SPECS if s.isa != "neon"}


@needs_tools
def test_typed_tiles_at_every_length_they_support(full_report):
    """Every typed vector-length-agnostic tile passed at each of 128..2048 bits with its
    run-time MR x NR, and each ISA the CPU lacks is a clear error when forced."""
    for s in SPECS:
        if not s.is_vla:
            continue
        seen = {}
        for r in full_report.runs:
            bits = cross.vector_bits_for(s, CONFIGS[r.label])
            k = r.kernels[s.name]
            if bits and CONFIGS[r.label].runs(s):
                assert k.passed == k.cases > 0 and (k.mr, k.nr) == (s.mr_at(bits), s.nr_at(bits))
                seen[bits] = k.passed
        assert set(seen) >= set(cross.DEFAULT_VLS), (s.name, seen)
    for r in full_report.runs:
        cfg = CONFIGS[r.label]
        missing = {s.isa for s in SPECS} - set(cfg.isas)
        assert set(r.forced_errors) == missing, r.label
        for isa, msg in r.forced_errors.items():
            assert f"MICROKERNEL_ISA={isa}" in msg and "cannot run" in msg


@needs_tools
def test_sme_results_identical_at_every_streaming_length(full_report):
    """Same inputs (the ``same_*`` cases, seeded by label) at SVL 128..2048: C is
    bit-identical for every built-in SME tile, and the run observed each SVL."""
    sme = [s.name for s in SPECS if s.isa == "sme"]
    assert sme and set(full_report.identity) == set(sme)
    for name in sme:
        v = full_report.identity[name]
        assert v["identical"] and v["cases"] == len(cross.identity_cases(TileSpec.from_name(name)))
        assert v["lengths"] == [f"sve-{b}" for b in cross.DEFAULT_VLS]
    for r in full_report.runs:
        if r.requested_svl_bits:
            assert r.observed_svl_bits == r.probe_svl_bits == r.requested_svl_bits


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
    rep = cross.cross_validate([spec], vls=(128, 384, 2048), neon_cpu=None, refusal=False,
                               timeout=300, cases_fn=_sve_edge_cases)
    for r in rep.runs:
        k = r.kernels[spec.name]
        assert r.ok, (r.label, r.errors, k.failures[:5])
        assert k.cases == len(_sve_edge_cases(spec, r.requested_vl_bits)) > 0


@needs_tools
def test_user_tiles_cross():
    """Non-built-in shapes through the same generator and harness, quick catalogue,
    at 128 and 384 bits and on the NEON-only CPU."""
    rep = cross.cross_validate(USER_TILES, vls=(128, 384), quick=True, refusal=False, timeout=300)
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
    parser = cross_cmd.add_arguments(argparse.ArgumentParser())
    args = parser.parse_args(["--vl", "256", "--quick", "--json", "--no-refusal-cpus",
                              "--kernels", "neon_8x12,sve_8x2v,neondot_s8s8_8x12,sme_bf16_2x2v"])
    assert cross_cmd.run(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] and [r["label"] for r in doc["runs"]] == ["sve-256", "neon-only"]
    assert doc["runs"][0]["observed_vl_bits"] == 256
    assert doc["runs"][0]["kernels"]["sve_8x2v"]["cases"] > 0
    assert doc["runs"][1]["kernels"]["neondot_s8s8_8x12"]["refused"] > 0
    assert doc["runs"][0]["observed_svl_bits"] == 256
    args = parser.parse_args(["--vl", "128", "--quick", "--neon-cpu", "none",
                              "--kernels", "neon_8x12,sme_2x2v"])
    assert cross_cmd.run(args) == 0
    out = capsys.readouterr().out
    assert "sve-128" in out and "neon_8x12" in out and "PASS" in out
    assert "dot-fp16" in out and "sme_2x2v MRxNR" in out and "8x8" in out
    with pytest.raises(SystemExit):
        parser.parse_args(["--vl", "200"])


def test_cli_reports_missing_tools(monkeypatch, capsys):
    monkeypatch.setenv("MICROKERNEL_CROSS_CC", "no-such-aarch64-gcc-xyz")
    args = cross_cmd.add_arguments(argparse.ArgumentParser()).parse_args(["--quick"])
    assert cross_cmd.run(args) == 2
    err = capsys.readouterr().err
    assert "apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user" in err


@needs_tools
def test_non_aarch64_tile_is_refused():
    with pytest.raises(cross.TileError, match="aarch64"):
        cross.build_harness(["avx2_6x16"])


def test_vector_length_errors_name_what_differs():
    from microkernel.cross.run import _length_errors
    assert _length_errors("a64fx", "VL", "SVE", 512, 512, 512, True) == []
    assert _length_errors("a64fx", "VL", "SVE", 512, 256, 512, True) == [
        "SVE code observed VL 256 bits, requested 512"]
    assert _length_errors("x", "SVL", "SME", 256, 256, 128, True) == [
        "probe reported SVL 128 bits, requested 256"]
    assert _length_errors("cortex-a72", "VL", "SVE", None, None, None, True) == [
        "cortex-a72 has no SVE but the probe cleared it"]
    assert _length_errors("cortex-a72", "VL", "SVE", None, None, None, False) == []


@needs_tools
def test_bad_arguments_are_refused_before_the_harness_builds(monkeypatch):
    """An unknown NEON-only CPU, a timeout or jobs below 1: ValueError naming it, before
    the harness is compiled or qemu runs (no emulated 'FAIL' for a typo)."""
    from microkernel.cross import run as cross_run
    monkeypatch.setattr(cross_run, "build_harness",
                        lambda *a, **k: pytest.fail("built the harness"))
    with pytest.raises(ValueError, match=r"--neon-cpu\) 'cortex-a7'.*nearest: cortex-a7\d"):
        cross.cross_validate(["neon_8x12"], vls=(128,), neon_cpu="cortex-a7")
    with pytest.raises(ValueError, match="timeout must be > 0"):
        cross.cross_validate(["neon_8x12"], vls=(128,), timeout=0)
    with pytest.raises(ValueError, match="jobs must be >= 1"):
        cross.cross_validate(["neon_8x12"], vls=(128,), jobs=-1)


@needs_tools
def test_progress_hears_of_the_build_and_each_run():
    said = []
    rep = cross.cross_validate(["neon_8x12"], vls=(128,), neon_cpu="cortex-a72", refusal=False,
                               quick=True, timeout=300, progress=said.append)
    assert rep.ok
    assert said[0].startswith("building the aarch64 harness")
    assert sorted(s.split()[0] for s in said[2:]) == ["neon-only", "sve-128"]
    assert [r.label for r in rep.runs] == ["sve-128", "neon-only"]   # configs' order kept
