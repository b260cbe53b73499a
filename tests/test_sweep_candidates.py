"""The sweep's tile enumeration: --max-shapes is a maximum, and requested --mr/--nr
values that give no tile say why (register budget, not a multiple of the lanes); an NR
beyond the enumerated 8 vectors is taken when asked for."""
import pytest

from microkernel.cli import main
from microkernel.sweep import SweepError, _ranked_specs, candidates
from microkernel.tile import ISAS


def _cands(*a, **k):
    notes = []
    return [s.name for s in candidates(*a, notes=notes, **k)], notes


@pytest.mark.parametrize("isa,types", [("avx2", "f32"), ("avx512", "f32"), ("neon", "f32"),
                                       ("sve", "f32"), ("avx512bf16", "bf16"), ("amx", "bf16")])
@pytest.mark.parametrize("most", [1, 3, 5, 16])
def test_max_shapes_is_a_maximum(isa, types, most):
    names, notes = _cands(isa, types=types, max_shapes=most)
    every, _ = _cands(isa, types=types, max_shapes=10_000)
    assert 1 <= len(names) <= most and set(names) <= set(every)
    if len(every) > most:
        assert notes == [f"{most} of the {len(every)} enumerated tile shapes kept "
                         f"(--max-shapes {most}): those using the most registers, one per "
                         f"vector width first"]
    specs, default, _ = _ranked_specs(isa, types, None, None, most)
    assert len(specs) <= most + 1                      # + gemm()'s default tile


def test_max_shapes_keeps_one_per_vector_width_first():
    from microkernel.tile import TileSpec, register_budget
    names, _ = _cands("avx512", max_shapes=16)
    widths = {TileSpec.from_name(n).vectors_per_row for n in names}
    assert widths == set(range(1, 9))                  # 16 >= 8 widths: every width
    names3, _ = _cands("avx512bf16", types="bf16", max_shapes=3)
    assert len({TileSpec.from_name(n).vectors_per_row for n in names3}) == 3
    need = [register_budget(TileSpec.from_name(n)).needed for n in names3]
    assert min(need) >= 30                             # the fullest widths


def test_a_requested_pair_over_the_register_budget_is_noted():
    names, notes = _cands("avx2", [4, 6], [16, 24])
    assert names == ["avx2_4x16", "avx2_6x16", "avx2_4x24"]
    assert notes == ["--mr 6 --nr 24: avx2_6x24 needs 22 vector registers (18 accumulators "
                     "+ 3 B vectors + 1 broadcast) but avx2 has 16; the compiler would spill "
                     "the register tile to the stack"]


def test_an_nr_that_is_not_a_multiple_of_the_lanes_is_named_as_such():
    names, notes = _cands("avx2", None, [25, 16])
    assert names and all(n.endswith("x16") for n in names)
    assert notes == ["--nr 25: not a multiple of avx2's 8 fp32 lanes (e.g. 24 or 32)"]
    with pytest.raises(SweepError, match=r"no avx2 f32 tile to sweep: --nr 25: not a "
                                         r"multiple of avx2's 8 fp32 lanes"):
        _ranked_specs("avx2", "f32", None, [25], 16)


def test_an_mr_or_nr_that_fits_nothing_says_why():
    names, notes = _cands("avx2", [40, 4])
    assert names and all(n.startswith("avx2_4x") for n in names)
    assert len(notes) == 1 and notes[0].startswith("--mr 40: no NR fits (avx2_40x8 needs 42 "
                                                   "vector registers")
    names, notes = _cands("avx2", None, [64, 16])
    assert len(notes) == 1 and notes[0].startswith(
        "--nr 64: no MR gives a tile that hides the FMA latency and fits the registers "
        "(avx2_1x64 needs 17 vector registers")


def test_an_nr_beyond_eight_vectors_is_taken_when_asked_for():
    lanes = ISAS["avx512"].lanes
    names, notes = _cands("avx512", None, [9 * lanes])
    assert names == ["avx512_1x144", "avx512_2x144"] and notes == []
    names, notes = _cands("avx512", [2], [9 * lanes, 20 * lanes])
    assert names == ["avx512_2x144"]
    assert notes[0].startswith("--mr 2 --nr 320: avx512_2x320 needs")


def test_sweep_predict_names_the_real_reason(capsys):
    assert main(["sweep", "--isa", "avx2", "--nr", "25", "--predict"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "no avx2 f32 tile to sweep: --nr 25: not a multiple of avx2's 8 fp32 lanes" in err


def test_sweep_prints_the_notes(monkeypatch, capsys):
    from microkernel import sweep as sw
    res = {"isa": "avx2", "types": "f32", "predicted": True, "mcpu": "znver2", "leader":
           "avx2_4x16", "default": None, "notes": ["--mr 6 --nr 24: avx2_6x24 needs 22"],
           "rows": [{"name": "avx2_4x16", "registers": "11/16", "spills": 0, "fmas_per_k": 8,
                     "predicted_cycles_per_k": 5.0, "predicted_utilisation": 0.8,
                     "is_default": False, "error": ""}]}
    monkeypatch.setattr(sw, "predicted", lambda *a, **k: res)
    assert main(["sweep", "--isa", "avx2", "--mr", "4,6", "--nr", "16,24", "--predict"]) == 0
    assert "note: --mr 6 --nr 24: avx2_6x24 needs 22" in capsys.readouterr().out


def test_max_shapes_help_says_what_it_keeps(capsys):
    with pytest.raises(SystemExit):
        main(["sweep", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert ("at most this many enumerated tile shapes (default 16): those using the most "
            "registers, one per vector width first; gemm()'s default tile is raced beside "
            "them unless --mr/--nr narrow the search") in text


def test_predict_names_the_race_options_it_ignores(monkeypatch, capsys):
    """--rounds, --threads, ... time a race; a predicted ranking runs none, and says so
    (it ignored them silently before). Defaults given explicitly are not named."""
    from microkernel import sweep as sw
    res = {"isa": "avx2", "types": "f32", "predicted": True, "mcpu": "znver3", "leader":
           "avx2_4x16", "default": None, "notes": [],
           "rows": [{"name": "avx2_4x16", "registers": "11/16", "spills": 0, "fmas_per_k": 8,
                     "predicted_cycles_per_k": 5.0, "predicted_flops_per_cycle": 25.6,
                     "predicted_utilisation": 0.8, "is_default": False, "error": ""}]}
    monkeypatch.setattr(sw, "predicted", lambda *a, **k: res)
    assert main(["sweep", "--isa", "avx2", "--predict", "--rounds", "9", "--threads", "2",
                 "--workload", "square", "--budget", "110"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "note: --workload, --threads, --rounds ignored: a predicted ranking times nothing" in out
    assert "--budget" not in out.split("ignored")[0]
    assert main(["sweep", "--isa", "avx2", "--predict"]) == 0
    assert "ignored" not in capsys.readouterr().out
