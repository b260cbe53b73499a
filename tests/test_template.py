"""``microkernel template NAME`` writes a kernel that passes the edge catalogue for
every panel layout: fp32, bf16 / fp16 widened to fp32, int16 pairs (vpmaddwd), int32
(scalar), VNNI and NEON dot-product quads, i8mm groups of 8, AVX512-BF16 pairs, the
AVX512-FP16 A pairs, AMX's 64-byte A rows (bf16 and int8), NEON's bf16 quads and fp16.

The template is plain C, so its module is built here without the tile's ISA flags
(the tile's own peak loop, whose intrinsics need them, swapped for the scalar one)
and run through the whole catalogue against the float64 reference, integers exact. A negative control: the same template with its K
groups read as if ungrouped fails (what `template` wrote for these tiles before
2026-12-04, when every tile got the fp32 text)."""
from __future__ import annotations

import pytest

from microkernel import build, codegen, kernel, registry, validate
from microkernel.commands.template import render
from microkernel.tile import TileSpec


def _one_per_layout() -> list[str]:
    seen, names = set(), []
    for s in registry.BUILTIN:
        if s.is_vla:
            continue
        lay = codegen.layout(s)
        key = (lay, s.gemm_types.name, codegen.edge_symbol(s) != "NULL")
        if key not in seen:
            seen.add(key)
            names.append(s.name)
    return names


LAYOUTS = _one_per_layout()


def built(name: str, source: str) -> kernel.Kernel:
    """``name``'s module with ``source`` as its micro-kernel, built without ISA flags,
    its peak loop the scalar one."""
    spec = TileSpec.from_name(name)
    args = kernel._build_args(spec, source)          # the module's own build, then:
    peak = codegen.generate_peak(spec.isa, spec.types)
    assert peak in args["source"]
    args.update(name=f"tpl_{name}", cflags=kernel.COMMON_CFLAGS,   # no ISA flags
                source=args["source"].replace(peak, codegen.generate_peak("scalar"), 1))
    return kernel.Kernel(spec, build.load_module(**args))


def test_the_list_covers_every_kind_of_panel():
    groups = {(codegen.layout(TileSpec.from_name(n)).ga, codegen.layout(TileSpec.from_name(n)).gb)
              for n in LAYOUTS}
    assert {(1, 1), (2, 2), (4, 4), (8, 8), (32, 2), (64, 4)} <= groups
    assert len(LAYOUTS) >= 15


@pytest.mark.parametrize("name", LAYOUTS)
def test_the_template_passes_the_edge_catalogue(name):
    text = render(name)
    assert f"mk_ukernel_{name}(" in text and "@" not in text.replace("@my_kernel.c", "")
    results = validate.run_catalogue(built(name, text))
    bad = [(r.case.label, r.detail) for r in results if not r.ok]
    assert not bad, bad[:5]
    assert len(results) > 50


@pytest.mark.parametrize("name", ["avx512vnni_u8s8_8x32", "amx_bf16_32x32"])
def test_negative_control_a_template_that_ignores_the_k_groups_fails(name):
    text = render(name)
    for old, new in (("(k / TILE_GA) * TILE_MR * TILE_GA + k % TILE_GA", "k * TILE_MR"),
                     ("ak[i * TILE_GA]", "ak[i]")):
        assert old in text
        text = text.replace(old, new)
    results = validate.run_catalogue(built(name, text))
    assert sum(not r.ok for r in results) > len(results) // 2


def test_the_first_line_names_the_file_it_is_written_to():
    assert render("avx2_s8s8_4x16", "mine.c").splitlines()[1].startswith(" * mine.c: ")
    assert render("scalar_4x4").splitlines()[1].startswith(" * scalar_4x4.c: ")
