"""The probe, the driver and the x86 micro-kernels under AddressSanitizer and
UndefinedBehaviorSanitizer (issue 7, item 1).

The C harness ``tests/c/sanitize_main.c`` includes probe.c and driver.c; each
micro-kernel is generated here by ``microkernel.codegen.generate`` and compiled as its
own object with only its ISA's flags (``tile.ISAS[isa].cflags``). Everything is built
with ``-fsanitize=address,undefined -fno-sanitize-recover=all``: the first report
aborts the run. The harness runs, per kernel the probe clears, the edge catalogue
(``microkernel.validate.catalogue``, written to a case file here), a sweep of every
(M, N) remainder and a seeded random corpus, against a double-precision reference in
C, and exits non-zero on any mismatch. Two builds: without OpenMP (the driver's
single-thread path) and with -fopenmp (and C tiles aligned to 64 bytes by a narrow first
panel, MK_C_ALIGN), running every case with a 2-thread team.

The AVX-512 kernel is compiled and linked too (so it is instrumented and its code
checked by the compiler), but the harness only calls it when the probe clears
AVX-512; on a CPU without it the output says so and the test checks that.

Negative controls prove the setup can fail: a micro-kernel that stores one row past
its tile must produce an ASan report, one that reads C when beta == 0 must produce a
FAIL line.
"""
from __future__ import annotations

import os
import pathlib
import platform
import re
import subprocess

import pytest

from microkernel import build, codegen, registry, validate
from microkernel.blocking import model_blocking
from microkernel.probe import probe
from microkernel.tile import TileSpec

IS_X86 = platform.machine().lower() in ("x86_64", "amd64")
pytestmark = pytest.mark.skipif(not IS_X86, reason="the sanitizer harness links the x86 kernels")

SAN_FLAGS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all",
             "-fno-omit-frame-pointer", "-g", "-O1"]
BASE_FLAGS = ["-std=gnu11", "-Wall", "-Werror=implicit-function-declaration"]

#: the registry's x86 built-ins and stress tiles (odd MR, NR of 1-3 vectors or 5, 7 lanes,
#: k-unrolls 2-4)
KERNELS = tuple(s.name for s in registry.stress(("avx512", "avx2", "scalar")))
HARNESS = pathlib.Path(__file__).resolve().parent / "c" / "sanitize_main.c"
#: random cases per kernel: the OpenMP build is slower (a 2-thread team per case)
FUZZ_PER_KERNEL = {False: 2000, True: 400}
SEED = 20240607

ASAN_OPTIONS = ("detect_leaks=1:halt_on_error=1:abort_on_error=0:"
                "detect_stack_use_after_return=1:check_initialization_order=1:"
                "strict_init_order=1:detect_invalid_pointer_pairs=0")
UBSAN_OPTIONS = "print_stacktrace=1:halt_on_error=1"
REPORT_RE = re.compile(r"ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|"
                       r"UndefinedBehaviorSanitizer")


def _cc() -> list[str]:
    return build.compiler()


def _sanitizers_work(tmp: pathlib.Path) -> str | None:
    """None when the compiler can build and run an ASan+UBSan program, else why not."""
    src = tmp / "probe_san.c"
    src.write_text("#include <stdlib.h>\nint main(void){char *p=malloc(4);p[0]=1;"
                   "int r=p[0]-1;free(p);return r;}\n")
    exe = tmp / "probe_san"
    try:
        res = subprocess.run([*_cc(), *SAN_FLAGS, str(src), "-o", str(exe)],
                             capture_output=True, text=True)
    except FileNotFoundError:
        return "no C compiler"
    if res.returncode:
        return ("the compiler cannot build with -fsanitize=address,undefined "
                "(Debian: apt-get install libasan8 libubsan1, or gcc): " + res.stderr[-500:])
    run = subprocess.run([str(exe)], capture_output=True, text=True,
                         env={**os.environ, "ASAN_OPTIONS": ASAN_OPTIONS})
    if run.returncode:
        return "an ASan program does not run here: " + run.stderr[-500:]
    return None


def kernel_lists(specs) -> dict[str, str]:
    """The harness's two generated includes: the project's X-macro kernel list
    (``codegen.kernel_list``) and each kernel's model blocking."""
    caches = probe().caches
    blk = [f"MK_BLOCKING({s.name}, {b.kc}, {b.mc}, {b.nc})"
           for s in specs for b in [model_blocking(s.mr, s.nr, caches)]]
    return {"sanitize_kernels.inc": codegen.kernel_list(specs, title="sanitize_kernels.inc",
                                                        source="tests/test_sanitizers.py"),
            "sanitize_blocking.inc": "\n".join(blk) + "\n"}


def catalogue_lines(specs) -> list[str]:
    """The edge catalogue of every spec, one harness case line each."""
    caches = probe().caches
    lines = ["# kernel label m n k alpha beta la lb lc nan_c nan_ab threads kc mc nc"]
    for spec in specs:
        kc = model_blocking(spec.mr, spec.nr, caches).kc
        for c in validate.catalogue(spec.mr, spec.nr, spec.k_unroll, kc):
            blk = c.blocking or (0, 0, 0)
            lines.append(f"{spec.name} {c.label} {c.m} {c.n} {c.k} {c.alpha!r} {c.beta!r} "
                         f"{c.a_layout} {c.b_layout} {c.c_layout} {int(c.nan_c)} "
                         f"{int(c.nan_ab)} {c.threads} {blk[0]} {blk[1]} {blk[2]}")
    return lines


def _run(cmd, **kw):
    res = subprocess.run([str(x) for x in cmd], capture_output=True, text=True, **kw)
    assert res.returncode == 0, f"$ {' '.join(map(str, cmd))}\n{res.stdout}\n{res.stderr}"
    return res


def build_harness(tmp: pathlib.Path, specs, *, flags=(), openmp=False, static=False,
                  exe_name="sanitize_main", extra_sources=(), lists: dict | None = None):
    """Compile tests/c/sanitize_main.c (baseline flags + ``flags``) and one object per
    kernel (its ISA's flags + ``flags``); link; return the executable's path."""
    src = build.c_src_dir()
    tmp.mkdir(parents=True, exist_ok=True)
    for name, text in (lists if lists is not None else kernel_lists(specs)).items():
        (tmp / name).write_text(text)
    cc = _cc()
    omp = ["-fopenmp"] if openmp else []
    objs = []
    for spec in specs:
        c_file = tmp / f"{spec.file_stem}.c"
        c_file.write_text(codegen.generate(spec))
        obj = tmp / f"{spec.file_stem}.o"
        _run([*cc, *BASE_FLAGS, *flags, *spec.info.cflags, "-c", c_file, "-o", obj])
        objs.append(obj)
    for extra, cflags in extra_sources:
        obj = tmp / (pathlib.Path(extra).stem + ".o")
        _run([*cc, *BASE_FLAGS, *flags, *cflags, "-c", extra, "-o", obj])
        objs.append(obj)
    main_o = tmp / f"{exe_name}.o"
    _run([*cc, *BASE_FLAGS, *flags, *omp, f"-I{tmp}", f"-I{src}", "-c",
          HARNESS, "-o", main_o])
    exe = tmp / exe_name
    _run([*cc, *flags, *omp, *(["-static"] if static else []), main_o, *objs, "-o", exe,
          "-lm", "-lpthread"])
    return exe


def parse_counts(stdout: str) -> dict[str, dict[str, int]]:
    out = {}
    for m in re.finditer(r"^kernel (\S+) (.*)$", stdout, re.M):
        out[m.group(1)] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))
                           if k not in ("isa",)}
    return out


@pytest.fixture(scope="module")
def san_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sanitize")
    why = _sanitizers_work(tmp)
    if why:
        pytest.skip(why)
    return tmp


@pytest.fixture(scope="module")
def specs():
    return [TileSpec.from_name(n) for n in KERNELS]


@pytest.fixture(scope="module")
def cases_file(san_dir, specs):
    path = san_dir / "catalogue.txt"
    path.write_text("\n".join(catalogue_lines(specs)) + "\n")
    return path


def _san_env():
    return {**os.environ, "ASAN_OPTIONS": ASAN_OPTIONS, "UBSAN_OPTIONS": UBSAN_OPTIONS}


def _check_run(res, specs, cases_file, fuzz):
    out = res.stdout + res.stderr
    assert not REPORT_RE.search(out), out[-6000:]
    assert res.returncode == 0, out[-6000:]
    assert "FAIL" not in res.stdout
    counts = parse_counts(res.stdout)
    usable = set(probe().isas)
    cat = {}
    for line in cases_file.read_text().splitlines():
        if not line.startswith("#"):
            cat[line.split()[0]] = cat.get(line.split()[0], 0) + 1
    for spec in specs:
        if spec.isa in usable:
            c = counts.get(spec.name)
            assert c is not None, f"{spec.name} did not run:\n{res.stdout}"
            assert c["failures"] == 0
            assert c["catalogue"] == cat[spec.name] > 0
            assert c["sweep"] == (2 * spec.mr + 1) * (2 * spec.nr + 1)
            assert c["fuzz"] == fuzz
            assert c["cases"] == c["catalogue"] + c["sweep"] + c["fuzz"]
        else:
            assert spec.name not in counts
            assert f"skip {spec.name}: the probe did not clear {spec.isa}" in res.stdout
    assert re.search(r"^decoders rounds=\d+ violations=0$", res.stdout, re.M)
    m = re.search(r"^total cases=(\d+) failures=0$", res.stdout, re.M)
    assert m and int(m.group(1)) > 0
    return counts


@pytest.mark.slow
@pytest.mark.parametrize("openmp", [False, True], ids=["serial", "openmp2"])
def test_asan_ubsan_clean(san_dir, specs, cases_file, openmp):
    # the OpenMP build also aligns C tiles (MK_C_ALIGN, c_src/driver.c) for the tiles
    # whose NR * 4 it divides (avx512_*, avx2_6x16, avx2_5x16_u4); the serial build not
    exe = build_harness(san_dir / ("omp" if openmp else "serial"), specs,
                        flags=SAN_FLAGS + (["-DMK_C_ALIGN=64"] if openmp else []), openmp=openmp)
    res = subprocess.run([str(exe), "--cases", str(cases_file), "--fuzz", str(FUZZ_PER_KERNEL[openmp]),
                          "--seed", str(SEED + openmp), "--threads", "2" if openmp else "1"],
                         capture_output=True, text=True, env=_san_env(), timeout=900)
    counts = _check_run(res, specs, cases_file, FUZZ_PER_KERNEL[openmp])
    summary = ", ".join(f"{k}: {v['cases']}" for k, v in counts.items())
    print(f"sanitized ({'openmp, 2 threads' if openmp else 'serial'}) cases per kernel: {summary}")


@pytest.mark.slow
@pytest.mark.parametrize("cstat", [False, True], ids=["blis", "c_stationary"])
def test_specialised_driver_asan_ubsan_clean(san_dir, cstat):
    """The driver as a kernel module compiles it: specialised for its tile (MK_MR,
    MK_NR, MK_UKERNEL: constant MR and NR in the loops and packing, a direct call of
    the micro-kernel), here for the AVX2 default tile, serial and with 2 threads; and
    with MK_C_STATIONARY (the AMX and AVX512-BF16 modules' one-thread loops, taken by
    the catalogue's and the corpus's cases whose K spans several KC blocks), there with
    the non-temporal C stores on every beta = 0 case (MK_CSTAT_NT_MIN = 1 byte)."""
    from microkernel.dispatch import default_tile
    spec = default_tile("avx2")
    if spec.isa not in probe().isas:
        pytest.skip(f"the probe does not clear {spec.isa}")
    tmp = san_dir / ("specialised_cstat" if cstat else "specialised")
    cases = tmp / "catalogue.txt"
    tmp.mkdir(parents=True, exist_ok=True)
    cases.write_text("\n".join(catalogue_lines([spec])) + "\n")
    special = [f"-DMK_MR={spec.mr}", f"-DMK_NR={spec.nr}", f"-DMK_UKERNEL={codegen.symbol(spec)}"]
    special += ["-DMK_C_STATIONARY=1", "-DMK_CSTAT_NT_MIN=1"] if cstat else []
    exe = build_harness(tmp, [spec], flags=SAN_FLAGS + special, openmp=True)
    for threads in (1, 2):
        res = subprocess.run([str(exe), "--cases", str(cases), "--fuzz", "400",
                              "--seed", str(SEED + threads), "--threads", str(threads)],
                             capture_output=True, text=True, env=_san_env(), timeout=900)
        _check_run(res, [spec], cases, 400)


# -- negative controls: the harness and the sanitizers do catch bugs ---------------------

BROKEN = r"""
#include <stdint.h>
/* 2x2 scalar micro-kernels with one deliberate bug each. */
static void tile(int64_t kc, const float *alpha, const float *a, const float *b,
                 float acc[2][2])
{
    for (int i = 0; i < 2; ++i) for (int j = 0; j < 2; ++j) acc[i][j] = 0.0f;
    for (int64_t k = 0; k < kc; ++k)
        for (int i = 0; i < 2; ++i) for (int j = 0; j < 2; ++j)
            acc[i][j] += a[k * 2 + i] * b[k * 2 + j];
    for (int i = 0; i < 2; ++i) for (int j = 0; j < 2; ++j) acc[i][j] *= *alpha;
}
/* stores the first `rows` rows (3: one past the tile, as zeros); with reads_c it reads
 * C even when beta == 0 */
static void broken(int rows, int reads_c, int64_t kc, const float *alpha, const float *a,
                   const float *b, const float *beta, float *c, int64_t rs_c, int64_t cs_c)
{
    float acc[2][2];
    tile(kc, alpha, a, b, acc);
    for (int i = 0; i < rows; ++i) for (int j = 0; j < 2; ++j) {
        float *p = c + i * rs_c + j * cs_c;
        float v = i < 2 ? acc[i][j] : 0.0f;
        *p = *beta == 0.0f && !reads_c ? v : v + *beta * *p;
    }
}
/* stores one row past its tile */
void mk_ukernel_broken_oob(int64_t kc, const float *alpha, const float *a, const float *b,
                    const float *beta, float *c, int64_t rs_c, int64_t cs_c)
{
    broken(3, 0, kc, alpha, a, b, beta, c, rs_c, cs_c);
}
/* reads C even when beta == 0 (0 * NaN survives) */
void mk_ukernel_broken_beta0(int64_t kc, const float *alpha, const float *a, const float *b,
                      const float *beta, float *c, int64_t rs_c, int64_t cs_c)
{
    broken(2, 1, kc, alpha, a, b, beta, c, rs_c, cs_c);
}
"""


@pytest.mark.parametrize("which,expect", [
    ("oob", "ERROR: AddressSanitizer"),
    ("beta0", "FAIL kernel=broken_beta0"),
])
def test_harness_catches_a_broken_kernel(san_dir, which, expect):
    tmp = san_dir / f"broken_{which}"
    tmp.mkdir()
    src = tmp / "broken.c"
    src.write_text(BROKEN)
    lists = {"sanitize_kernels.inc": f"MK_KERNEL(broken_{which}, scalar, 2, 2, 2, 1, 0)\n",
             "sanitize_blocking.inc": f"MK_BLOCKING(broken_{which}, 64, 64, 64)\n"}
    exe = build_harness(tmp, [], flags=SAN_FLAGS, extra_sources=[(src, [])], lists=lists)
    res = subprocess.run([str(exe), "--fuzz", "200", "--seed", "3"], capture_output=True,
                         text=True, env=_san_env(), timeout=300)
    assert res.returncode != 0
    assert expect in res.stdout + res.stderr, (res.stdout[-3000:], res.stderr[-3000:])
