"""microkernel.envvars.get, gemm()'s per-call read of its environment variables, against
os.environ.get: the same answer for unset, empty, ASCII and non-ASCII values, after
changes through os.environ between calls, and with os.environ replaced by a mapping
without CPython's internals (the fallback)."""
import os

import numpy as np
import pytest

import microkernel as mk
from microkernel import envvars

NAME = "MICROKERNEL_TEST_ENVVARS"


@pytest.mark.parametrize("value", [None, "", "4", " 2 ", "é", "a=b", "\udcff"])
def test_get_matches_os_environ_get(monkeypatch, value):
    if value is None:
        monkeypatch.delenv(NAME, raising=False)
    else:
        monkeypatch.setenv(NAME, value)
    for default in (None, "", "x"):
        assert envvars.get(NAME, default) == os.environ.get(NAME, default)
    assert envvars.get(NAME) == (None if value is None else value)


def test_get_follows_changes_between_calls(monkeypatch):
    monkeypatch.delenv(NAME, raising=False)
    assert envvars.get(NAME, "unset") == "unset"
    os.environ[NAME] = "1"
    try:
        assert envvars.get(NAME) == "1"
        os.environ[NAME] = "22"
        assert envvars.get(NAME) == "22"
    finally:
        del os.environ[NAME]
    assert envvars.get(NAME) is None


def test_get_falls_back_when_os_environ_is_a_plain_mapping(monkeypatch):
    monkeypatch.setattr(os, "environ", {NAME: "plain"})
    assert envvars.get(NAME) == "plain"
    assert envvars.get(NAME + "_NOT_SET", "d") == "d"


def test_gemm_default_count_follows_the_variable_per_call(monkeypatch):
    # a bad value set between two calls is reported by the next one, naming the variable
    A = np.ones((4, 3), np.float32)
    monkeypatch.delenv("MICROKERNEL_NUM_THREADS", raising=False)
    np.testing.assert_array_equal(mk.gemm(A, A.T), np.full((4, 4), 3, np.float32))
    monkeypatch.setenv("MICROKERNEL_NUM_THREADS", "many")
    with pytest.raises(ValueError, match="MICROKERNEL_NUM_THREADS='many' is not an integer"):
        mk.gemm(A, A.T)
    monkeypatch.setenv("MICROKERNEL_NUM_THREADS", "1")
    np.testing.assert_array_equal(mk.gemm(A, A.T), np.full((4, 4), 3, np.float32))
