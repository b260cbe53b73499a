"""setuptools glue: the probe is a cffi extension built at install time
(``cffi_modules`` is a setup() keyword, so it lives here, not in pyproject.toml).
Micro-kernels are generated and compiled at run time (microkernel/build.py)."""
import pathlib
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithCSources(build_py):
    """Ship c_src/ inside the package (as microkernel/_c_src) for non-editable
    installs, so run-time builds find driver.c and the headers."""

    def run(self):
        super().run()
        src = pathlib.Path(__file__).parent / "c_src"
        dst = pathlib.Path(self.build_lib) / "microkernel" / "_c_src"
        if src.is_dir():
            shutil.copytree(src, dst, dirs_exist_ok=True)


setup(
    cffi_modules=["microkernel/_probe_build.py:ffibuilder"],
    cmdclass={"build_py": BuildPyWithCSources},
)
