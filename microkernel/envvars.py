"""The environment variables gemm() reads on every call, read cheaply.

``os.environ.get`` of a variable that is not set costs about 2 us on CPython 3.11:
``os._Environ.__getitem__`` raises a KeyError that ``Mapping.get`` catches. gemm()'s
default path reads ``MICROKERNEL_NUM_THREADS`` and ``MICROKERNEL_ISA``, usually unset, on
every call (a user may change them between calls), which was about 4 us of an 8 x 8 x 8
call's 27 us on the 2-core Zen 3. CPython's ``os.environ`` keeps the environment in a
dict of encoded keys and values (``os.environ._data``), which its ``__setitem__`` and
``__delitem__`` update together with ``putenv`` / ``unsetenv``; :func:`get` looks the key up
there, 0.1-0.2 us hit or miss, and gives exactly what ``os.environ.get`` gives. Where those
attributes are missing (another Python implementation, or ``os.environ`` replaced by a
plain mapping) it calls ``os.environ.get``.
"""
import os

__all__ = ["get"]

_KEYS: dict = {}      # name -> (the os.environ it was encoded for, its encoded key)


def get(name: str, default: str | None = None) -> str | None:
    """``os.environ.get(name, default)``: the variable's value as ``str``, or ``default``
    when it is not set in ``os.environ``."""
    env = os.environ
    try:
        data, decode = env._data, env.decodevalue
        hit = _KEYS.get(name)
        if hit is None or hit[0] is not env:
            hit = _KEYS[name] = (env, env.encodekey(name))
    except AttributeError:                  # not CPython's os._Environ
        return env.get(name, default)
    raw = data.get(hit[1])
    return default if raw is None else decode(raw)
