"""A non-editable install, used from outside the repository: the wheel builds without
setuptools warnings, carries the C sources, the shipped data and the template, and the
commands a user is told to run work from it (issue 19, items 1 and 5)."""
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SETUPTOOLS_WARNING = re.compile(r"BuildBackendWarning|SetuptoolsDeprecationWarning|"
                                r"SetuptoolsWarning|is absent from the `packages`|"
                                r"_DeprecatedConfig|project\.license", re.I)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("install")
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps",
                          "--no-build-isolation", "-w", str(tmp / "wheel"), "-v"],
                         capture_output=True, text=True, cwd=tmp)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    warnings = [ln for ln in (res.stdout + res.stderr).splitlines() if SETUPTOOLS_WARNING.search(ln)]
    wheel = next((tmp / "wheel").glob("microkernel-*.whl"))
    target = tmp / "site"
    res = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--target",
                          str(target), str(wheel)], capture_output=True, text=True, cwd=tmp)
    assert res.returncode == 0, res.stderr[-3000:]
    return tmp, target, warnings


def _run(tmp, target, *args):
    env = {**os.environ, "PYTHONPATH": str(target), "MICROKERNEL_CACHE_DIR": str(tmp / "cache")}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=tmp,
                          env=env, timeout=600)


def test_the_wheel_builds_without_setuptools_warnings(installed):
    assert installed[2] == []


def test_the_installed_package_is_used_and_carries_its_sources(installed):
    tmp, target, _ = installed
    res = _run(tmp, target, "-c", "import microkernel, microkernel.build as b; "
               "print(microkernel.__file__); print(b.c_src_dir())")
    assert res.returncode == 0, res.stderr
    pkg, c_src = res.stdout.split()
    assert pkg.startswith(str(target)) and c_src == str(target / "microkernel" / "_c_src")
    from microkernel.build import DRIVER_FILES
    for f in DRIVER_FILES + ("timing.c", "probe.c", "harness.c", "ukernels/mk_kernels.inc",
                             "template/ukernel_template.c",
                             "template/ukernel_template_typed.c"):
        assert (target / "microkernel" / "_c_src" / f).is_file(), f
    assert (target / "microkernel" / "data" / "deepbench_inference_device.csv").is_file()


def test_the_commands_run_from_the_install(installed):
    tmp, target, _ = installed
    res = _run(tmp, target, "-m", "microkernel", "validate", "--kernel", "scalar_4x4",
               "--quick", "--json")
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    res = _run(tmp, target, "-m", "microkernel", "template", "scalar_4x4", "-o", "mine.c")
    assert res.returncode == 0 and (tmp / "mine.c").is_file(), res.stderr
    res = _run(tmp, target, "-m", "microkernel", "compare", "--kernels",
               "scalar_4x4;scalar_4x4@mine.c", "--sizes", "32", "--rounds", "2",
               "--peers", "numpy")
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert "edge catalogue passed" in res.stdout
