"""Peers: an empty --peers means no peer in sweep as in compare; a peer that cannot run
says why (not installed, with the pip package; not a peer, with the known ones)."""
import importlib.util
import json

import pytest

import microkernel as mk
from microkernel import peers
from microkernel.cli import main


@pytest.fixture
def installed(monkeypatch):
    """installed(name, yes): make find_spec see the peer ``name`` installed or not."""
    real = importlib.util.find_spec
    state = {}

    def find_spec(name, *a, **k):
        if name in state:
            return object() if state[name] else None
        return real(name, *a, **k)
    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    return lambda name, yes: state.__setitem__(name, yes)


def test_an_empty_list_of_peers_is_no_peer():
    assert peers.available([]) == [] and peers.available([], types="bf16") == []
    assert peers.available()[0] == "numpy" and peers.available(None) == peers.available()
    assert peers.available(["numpy"]) == ["numpy"]


def test_sweep_with_empty_peers_times_no_peer(monkeypatch, tmp_path):
    from test_cli import _small_workload
    _small_workload(monkeypatch)
    isa = mk.probe().best_isa
    out = tmp_path / "s.json"
    assert main(["sweep", "--isa", isa, "--mr", "2", "--nr", str(mk.tile.ISAS[isa].lanes),
                 "--rounds", "2", "--budget", "5", "--min-time", "0.002", "--peers", "",
                 "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["peers"] == {}
    assert {s["contender"] for s in res["samples"]["workload"]} == {f"{isa}_2x"
                                                                    f"{mk.tile.ISAS[isa].lanes}"}


def test_compare_with_empty_peers_times_no_peer(tmp_path):
    out = tmp_path / "c.json"
    assert main(["compare", "--kernels", "scalar_4x4", "--sizes", "24", "--rounds", "2",
                 "--min-time", "0.001", "--peers", "", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["peers"] == {}


def test_why_a_peer_cannot_run(installed):
    installed("blis", False)
    why = peers.typed_why_not("blis", "f32")
    assert why.startswith("blis is not installed here: ") and why.endswith("-m pip install blis")
    assert peers.typed_why_not("blis", "bf16") == why          # first: not installed
    assert peers.available(["numpy", "blis"]) == ["numpy"]
    installed("blis", True)
    assert peers.typed_why_not("blis", "f32") is None
    assert peers.typed_why_not("blis", "bf16") == "blis is float32 only"
    assert peers.available(["blis"]) == ["blis"] and peers.available(["blis"], "bf16") == []
    installed("torch", False)
    assert peers.typed_why_not("torch", "bf16").endswith("-m pip install torch")
    assert peers.typed_why_not("numpy", "u8u8") is None
    assert peers.typed_why_not("mkl", "f32") == "'mkl' is not a peer (known: numpy, torch, blis)"


@pytest.mark.parametrize("command", [
    ["compare", "--kernels", "scalar_4x4", "--sizes", "24"],
    ["sweep"],
    ["bench", "--kernel", "scalar_4x4"],
])
def test_a_peer_that_is_not_installed_is_named_as_such(command, installed, capsys, monkeypatch):
    from microkernel import sweep as sw
    monkeypatch.setattr(sw, "sweep", lambda *a, **k: pytest.fail("the sweep started"))
    monkeypatch.setattr("microkernel.timing.Rounds.round",
                        lambda *a, **k: pytest.fail("timing started"))
    installed("blis", False)
    assert main([*command, "--peers", "numpy,blis", "--rounds", "2"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "--peers: blis is not installed here: " in err and "-m pip install blis" in err
    assert "float32 only" not in err and "unknown" not in err


def test_an_unknown_peer_lists_the_known_ones(capsys):
    assert main(["compare", "--kernels", "scalar_4x4", "--sizes", "24", "--peers", "mkl"]) == 2
    assert ("--peers: 'mkl' is not a peer (known: numpy, torch, blis)"
            in " ".join(capsys.readouterr().err.split()))
