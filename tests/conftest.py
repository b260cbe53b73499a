"""Shared fixtures: the kernels this machine can run, named by their tile."""
import pytest

import microkernel as mk


def runnable_kernels():
    return mk.kernels()


@pytest.fixture(params=runnable_kernels())
def kernel(request):
    return mk.get_kernel(request.param)
