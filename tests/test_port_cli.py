"""``microkernel port``'s flags: each one takes effect or is refused (exit 2, on stderr
with the ``microkernel port: error:`` prefix), for the SIMT port, ``--mma`` and ``--arch``.
Pure Python: nothing here compiles or runs a kernel (test_mma_sim runs ``--mma
--validate`` in the simulator)."""
import json

import pytest

from microkernel.cli import main

PREFIX = "microkernel port: error: "


def _exit(argv) -> int:
    """main's exit status, argparse's own usage errors (SystemExit) included."""
    try:
        return main(argv)
    except SystemExit as e:
        return e.code


@pytest.mark.parametrize("extra", [
    ["--arch", "sm_90"], ["--arch", "all"], ["--arch", "sm_90", "--mma", "f16"],
], ids=" ".join)
def test_validate_with_arch_is_refused_before_any_work(extra, capsys):
    """--arch models the port and runs nothing: --validate there used to exit 0 with no
    validation at all."""
    assert _exit(["port", "avx512_8x16", "--validate", *extra]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    assert cap.err.startswith(PREFIX) and "--validate" in cap.err and "--arch" in cap.err
    assert "--mma P --validate" in cap.err          # what to run instead
    assert len(cap.err.strip().splitlines()) == 1


@pytest.mark.parametrize("argv, words", [
    (["port", "foo", "--mma", "f16"], "bad tile name 'foo'"),
    (["port", "avx512_8x16", "--stages", "9", "--mma", "f16"], "shared memory"),
    (["port", "avx512_8x16", "--arch", "sm_75"], "unknown --arch 'sm_75'"),
    (["port", "nosuch_1x1", "--arch", "all"], "unknown ISA 'nosuch'"),
    (["port", "avx512_8x16", "--arch", "all", "--threads", "2048"], "threads"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_mma_and_arch_errors_go_to_stderr_with_the_prefix(argv, words, capsys):
    """They used to be a bare 'error: ...' line on stdout."""
    assert _exit(argv) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err.startswith(PREFIX) and words in cap.err


def test_errors_with_json_stay_json_on_stdout(capsys):
    assert _exit(["port", "foo", "--mma", "f16", "--json"]) == 2
    assert "bad tile name" in json.loads(capsys.readouterr().out)["error"]
    assert _exit(["port", "avx512_8x16", "--arch", "sm_75", "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["known"][-1] == "all"


@pytest.mark.parametrize("extra, words", [
    (["--mma", "f16", "--warp", "32x64"], "--warp"),
    (["--mma", "f16", "--warp", "none"], "--warp"),
    (["--mma", "f16", "--threads", "96"], "--threads"),
    (["--mma", "f16", "--threads", "2048"], "--threads"),
    (["--smem", "pad"], "--smem"),
    (["--stages", "3"], "--stages"),
    (["--smem", "none", "--stages", "2"], "--smem and --stages"),
    (["--arch", "all", "--bk", "8"], "--bk"),
    (["--arch", "sm_90", "--warp", "none", "--smem", "pad"], "--smem and --warp"),
    (["--arch", "cdna3", "--stages", "3", "--mma", "f16"], "--stages"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_flags_the_port_would_ignore_are_refused(extra, words, capsys):
    assert _exit(["port", "avx512_8x16", "--no-compile", *extra]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err.startswith(PREFIX) and words in cap.err


@pytest.mark.parametrize("flag", ["--bk", "--stages", "--threads", "--vector-bits"])
@pytest.mark.parametrize("value", ["0", "-4"])
def test_zero_or_negative_sizes_are_refused(flag, value, capsys):
    """0 used to mean 'the default' without saying so."""
    extra = ["--mma", "f16"] if flag == "--stages" else []
    assert _exit(["port", "avx512_8x16", "--no-compile", flag, value, *extra]) == 2
    assert f"argument {flag}: must be a positive integer" in capsys.readouterr().err


def test_mma_takes_threads_and_bk(capsys):
    """--threads (32 per warp) and --bk shape the tensor-core block; they used to be
    ignored (4 warps, BK 32 whatever was asked)."""
    assert main(["port", "avx512_8x16", "--mma", "f16", "--no-compile", "--json",
                 "--threads", "64", "--bk", "16", "--stages", "2", "--smem", "pad"]) == 0
    p = json.loads(capsys.readouterr().out)["plan"]
    assert p["warps_per_block"] == 2 and p["tile"]["threads"] == 64
    assert p["block_tile"][2] == 16 and p["tile"]["stages"] == 2 and p["tile"]["smem"] == "pad"
    # "auto" is the default warp tile: accepted with --mma too
    assert main(["port", "avx512_8x16", "--mma", "f16", "--no-compile", "--json",
                 "--warp", "auto"]) == 0
    assert json.loads(capsys.readouterr().out)["plan"]["warps_per_block"] == 4
    assert _exit(["port", "avx512_8x16", "--mma", "f16", "--no-compile", "--bk", "24"]) == 2
    assert "bk=24 must be a multiple of 16" in capsys.readouterr().err


def test_simt_and_arch_defaults_unchanged(capsys):
    """--threads defaults to 256 for the SIMT port and --arch (None on the parser, so
    that --mma can tell it was not given)."""
    assert main(["port", "avx512_8x16", "--no-compile", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["plan"]["tile"]["threads"] == 256
    assert main(["port", "avx512_8x16", "--arch", "sm_90", "--json", "--no-compile"]) == 0
    assert json.loads(capsys.readouterr().out)["threads"] == 256
    assert main(["port", "avx512_8x16", "--no-compile", "--json", "--threads", "128",
                 "--bk", "16", "--warp", "none"]) == 0
    t = json.loads(capsys.readouterr().out)["plan"]["tile"]
    assert (t["threads"], t["bk"], t.get("warp_tile")) == (128, 16, None)
