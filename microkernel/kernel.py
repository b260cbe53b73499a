"""A compiled kernel: one TileSpec's micro-kernel + the one driver, in one cffi module.

Each kernel module holds the generated micro-kernel, the ISA's FMA peak loop, the
ISA-free driver (``c_src/driver.c``) and timing helpers (``c_src/timing.c``), all
compiled with that ISA's flags only (``tile.ISAS[isa].cflags``) plus -fopenmp. The
module is built and imported only after the caller (``dispatch``) has checked that
the probe cleared the ISA: importing it is the first time any of its instructions
can run.
"""
from __future__ import annotations

import dataclasses
import functools
import os
import re

from . import build, codegen
from .tile import TileSpec

#: What both module kinds declare: the blocking (c_src/mk_ukernel.h), MR, NR ...
_CDEF_HEAD = """
typedef struct { int64_t kc, mc, nc, chunks, parts; } mk_blocking;
int64_t mk_mr(void);
int64_t mk_nr(void);
"""
#: ... and the L1 timing, the FMA peak, the workspace held, the pool's threads, the
#: parts the team picks (c_src/mk_team.h).
_CDEF_TAIL = """
double mk_time_ukernel(int64_t kc, int64_t reps);
double mk_fma_peak(int64_t iters, double *flops);
int64_t mk_workspace_bytes(void);
int mk_pool_threads(int awake);
int64_t mk_team_parts(int64_t panels, int64_t ways, int64_t mc_panels);
"""

CDEF = _CDEF_HEAD + """
void mk_ukernel(int64_t kc, const float *alpha, const float *a, const float *b,
                const float *beta, float *c, int64_t rs_c, int64_t cs_c);
int mk_gemm(int64_t m, int64_t n, int64_t k, float alpha,
            const float *a, int64_t rs_a, int64_t cs_a,
            const float *b, int64_t rs_b, int64_t cs_b,
            float beta, float *c, int64_t rs_c, int64_t cs_c,
            const mk_blocking *blk, int nthreads);
""" + _CDEF_TAIL

#: The typed modules' entry points (a typed tile: microkernel.dtypes): the same as CDEF's
#: with every operand and scalar behind a void pointer of the tile's types (A and B in
#: their storage types, alpha, beta and C of C's type), and the micro-kernel on packed
#: panels of the panel types.
CDEF_TYPED = _CDEF_HEAD + """
int64_t mk_kgroup(void);
void mk_ukernel_t(int64_t kc, const void *alpha, const void *a, const void *b,
                  const void *beta, void *c, int64_t rs_c, int64_t cs_c);
int mk_gemm_t(int64_t m, int64_t n, int64_t k, const void *alpha,
              const void *a, int64_t rs_a, int64_t cs_a,
              const void *b, int64_t rs_b, int64_t cs_b,
              const void *beta, void *c, int64_t rs_c, int64_t cs_c,
              const mk_blocking *blk, int nthreads);
""" + _CDEF_TAIL

#: The start of both glue templates (GLUE, GLUE_TYPED): the specialisation, the driver
#: and timing sources, the micro-kernel's descriptor, MR and NR.
_GLUE_HEAD = """
{specialise}
#include "driver.c"
#include "timing.c"

{desc}
static mk_ukernel_desc mk_desc(void)
{{
    mk_ukernel_desc d;
    mk_fill_desc(&d);
    return d;
}}
int64_t mk_mr(void) {{ return {mr}; }}
int64_t mk_nr(void) {{ return {nr}; }}
"""

#: The end of both: the micro-kernel timing entry point.
_GLUE_TAIL = """\
double mk_time_ukernel(int64_t kc, int64_t reps)
{{
    mk_ukernel_desc d = mk_desc();
    return mk_time_ukernel_desc(&d, kc, reps);
}}
#ifndef MK_HAVE_POOL_THREADS  /* an older driver (bench/driver_ab.py --rev) */
static int mk_pool_threads(int awake) {{ (void)awake; return 0; }}
#endif
"""

GLUE_TYPED = _GLUE_HEAD + """\
int64_t mk_kgroup(void) {{ return MK_G; }}
void mk_ukernel_t(int64_t kc, const void *alpha, const void *a, const void *b,
                  const void *beta, void *c, int64_t rs_c, int64_t cs_c)
{{
    {sym}(kc, (const MK_TC *)alpha, (const MK_TA *)a, (const MK_TB *)b,
          (const MK_TC *)beta, (MK_TC *)c, rs_c, cs_c);
}}
int mk_gemm_t(int64_t m, int64_t n, int64_t k, const void *alpha,
              const void *a, int64_t rs_a, int64_t cs_a,
              const void *b, int64_t rs_b, int64_t cs_b,
              const void *beta, void *c, int64_t rs_c, int64_t cs_c,
              const mk_blocking *blk, int nthreads)
{{
    mk_ukernel_desc d = mk_desc();
    return mk_gemm_driver(&d, blk, m, n, k, *(const MK_TC *)alpha,
                          (const MK_SA *)a, rs_a, cs_a, (const MK_SB *)b, rs_b, cs_b,
                          *(const MK_TC *)beta, (MK_TC *)c, rs_c, cs_c, nthreads);
}}
""" + _GLUE_TAIL

#: Vector width (bytes) at which the driver aligns C tiles (MK_C_ALIGN in driver.c): a
#: vector of a whole cache line splits a line at every unaligned access to C (numpy's
#: buffers start 16 bytes past a 64-byte boundary). A gain on Sapphire Rapids, level on
#: Zen 3 with 32-byte vectors (docs/design-notes.md).
C_ALIGN_VECTOR_BYTES = 64

GLUE = _GLUE_HEAD + """\
void mk_ukernel(int64_t kc, const float *alpha, const float *a, const float *b,
                const float *beta, float *c, int64_t rs_c, int64_t cs_c)
{{
    {sym}(kc, alpha, a, b, beta, c, rs_c, cs_c);
}}
int mk_gemm(int64_t m, int64_t n, int64_t k, float alpha,
            const float *a, int64_t rs_a, int64_t cs_a,
            const float *b, int64_t rs_b, int64_t cs_b,
            float beta, float *c, int64_t rs_c, int64_t cs_c,
            const mk_blocking *blk, int nthreads)
{{
    mk_ukernel_desc d = mk_desc();
    return mk_gemm_driver(&d, blk, m, n, k, alpha, a, rs_a, cs_a, b, rs_b, cs_b,
                          beta, c, rs_c, cs_c, nthreads);
}}
""" + _GLUE_TAIL

#: flags every kernel module gets besides its ISA's own
COMMON_CFLAGS = ("-O3", "-fopenmp", "-fno-math-errno", "-Wall", "-Werror=implicit-function-declaration")


@dataclasses.dataclass(frozen=True)
class Kernel:
    """A loaded kernel. ``module.lib`` has the C entry points of ``CDEF``; ``source``
    is the path of a micro-kernel source that replaced the generated one (None: the
    generated one)."""
    spec: TileSpec
    module: object
    source: str | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def label(self) -> str:
        """``name``, or ``name@source`` when a source file replaced the micro-kernel."""
        return self.name if self.source is None else f"{self.name}@{self.source}"

    @property
    def lib(self):
        return self.module.lib

    @property
    def ffi(self):
        return self.module.ffi

    @functools.cached_property
    def mr(self) -> int:
        return int(self.lib.mk_mr())

    @functools.cached_property
    def nr(self) -> int:
        """NR in fp32 columns at this machine's vector length."""
        return int(self.lib.mk_nr())

    def ukernel(self, kc: int, alpha: float, a_panel, b_panel, beta: float, c):
        """Call the micro-kernel once on packed panels (numpy float32, C-contiguous):
        a_panel (kc, MR), b_panel (kc, NR), c (MR, NR) updated in place."""
        ffi = self.ffi
        fp = lambda x: ffi.cast("float *", x.ctypes.data)  # noqa: E731
        al = ffi.new("float *", alpha)
        be = ffi.new("float *", beta)
        self.lib.mk_ukernel(kc, al, fp(a_panel), fp(b_panel), be, fp(c),
                            c.strides[0] // 4, c.strides[1] // 4)
        return c

    def time_ukernel(self, kc: int = 256, reps: int = 20000) -> float:
        """GFLOP/s of the micro-kernel with packed panels hot in L1 (timed in C)."""
        secs = self.lib.mk_time_ukernel(kc, reps)
        if secs < 0:
            raise MemoryError("mk_time_ukernel could not allocate its panels")
        return 2.0 * self.mr * self.nr * kc * reps / secs / 1e9

    def fma_peak(self, iters: int = 20_000_000) -> float:
        """GFLOP/s of independent FMA chains on one core for this kernel's ISA."""
        flops = self.ffi.new("double *")
        secs = self.lib.mk_fma_peak(iters, flops)
        return flops[0] / secs / 1e9


#: C comments, and ``#if 0`` ... ``#endif`` blocks without a nested ``#if``
_C_DEAD = re.compile(r"/\*.*?\*/|//[^\n]*|^[ \t]*#[ \t]*if[ \t]+0\b(?:(?!^[ \t]*#[ \t]*if).)*?"
                     r"^[ \t]*#[ \t]*endif\b", re.S | re.M)


def defines(text: str, symbol: str) -> bool:
    """Whether the C text ``text`` defines the function ``symbol``: its name, its
    parameter list, then the body's brace, outside comments and ``#if 0`` blocks (a
    prototype, a call or a commented-out definition does not count)."""
    live = _C_DEAD.sub(" ", text)
    return re.search(rf"\b{re.escape(symbol)}\s*\([^;{{}}]*\)\s*\{{", live) is not None


def module_source(spec: TileSpec, ukernel_source: str | None = None,
                  source_path: str | None = None) -> str:
    """The whole C source of a kernel's module (micro-kernel, peak loop, glue);
    ``ukernel_source`` (C text) replaces the generated micro-kernel; the module calls
    its edge entry point ``mk_ukernel_<name>_edge`` where it defines one (optional in
    the contract, c_src/mk_ukernel.h; whether or not the generated kernel has one), and
    otherwise computes edge tiles in the driver's MR x NR buffer. With
    ``source_path``, a ``#line`` directive makes the compiler report errors in that
    text at the user's file and line (the generated module file is deleted after the
    build)."""
    nr = codegen.nr_expr(spec)
    sym = codegen.symbol(spec)
    # a tile fixed at compile time gets a driver specialised for it (see driver.c)
    specialise = ("" if not (nr.isdigit() and codegen.mr_expr(spec).isdigit()) else
                  f"#define MK_MR {spec.mr}\n#define MK_NR {nr}\n#define MK_UKERNEL {sym}")
    if spec.info.lanes is not None and spec.info.lanes * 4 == C_ALIGN_VECTOR_BYTES:
        # C tiles on 64-byte boundaries (driver.c, MK_C_ALIGN); a source may set its own
        specialise += (f"\n#ifndef MK_C_ALIGN\n#define MK_C_ALIGN {C_ALIGN_VECTOR_BYTES}"
                       f"\n#endif")
    typed = codegen.layout(spec).typed
    edge_name = codegen.common.edge_symbol(spec)    # the contract's name, generated or not
    glue = (GLUE_TYPED if typed else GLUE).format(
        mr=codegen.mr_expr(spec), nr=nr, sym=sym, specialise=specialise,
        desc=codegen.desc_function(spec, "mk_fill_desc", static=True, edge=(
            None if ukernel_source is None else
            edge_name if defines(ukernel_source, edge_name) else "NULL")))
    ukernel = codegen.generate(spec) if ukernel_source is None else ukernel_source
    if ukernel_source is not None and source_path is not None:
        quoted = os.fspath(source_path).replace("\\", "\\\\").replace('"', '\\"')
        ukernel = (f'#line 1 "{quoted}"\n' + ukernel.rstrip("\n")
                   + f'\n#line 1 "<{spec.name} module: peak loop and driver glue>"\n')
    return "\n".join([codegen.module_defines(spec), ukernel,
                      codegen.generate_peak(spec.isa, spec.types), glue])


def _build_args(spec: TileSpec, ukernel_source: str | None = None,
                source_path: str | None = None) -> dict:
    src_dir = build.c_src_dir()
    return dict(
        name=spec.name if ukernel_source is None else f"{spec.name}_src",
        cdef=CDEF_TYPED if codegen.layout(spec).typed else CDEF,
        source=module_source(spec, ukernel_source, source_path),
        cflags=COMMON_CFLAGS + spec.cflags, include_dirs=(str(src_dir),),
        ldflags=("-fopenmp",),
        depends=[src_dir / f for f in build.DRIVER_FILES + ("timing.c",)])


def compile_only(spec: TileSpec):
    """Compile ``spec``'s module without importing it (any ISA, runnable here or
    not); returns the path of the shared object (for disassembly)."""
    return build.build_module(**_build_args(spec))[1]


#: every kernel module :func:`load` imported in this process, in order (each has its own
#: pool of worker threads, c_src/mk_pool.h)
LOADED: list[Kernel] = []


def pool_threads(awake: int) -> int:
    """The pool workers of every kernel module this process loaded (``mk_pool_threads``
    summed over :data:`LOADED`): all of them with ``awake`` = 0; with 1, those in a job,
    spinning after one, or woken and not yet running."""
    libs = {id(k.lib): k.lib for k in list(LOADED)}   # load() may race to one module twice
    return sum(lib.mk_pool_threads(awake) for lib in libs.values())


@functools.lru_cache(maxsize=None)
def load(spec: TileSpec, ukernel_source: str | None = None,
         source_path: str | None = None) -> Kernel:
    """Generate, compile (cached) and import ``spec``'s kernel module; with
    ``ukernel_source`` (the C text read from ``source_path``), that micro-kernel
    instead of the generated one.

    The caller must have checked that this CPU and OS run ``spec.isa``
    (``dispatch.get_kernel`` does). Raises ``build.BuildError`` on compile errors and
    ValueError for a ``ukernel_source`` without its ``source_path`` (which marks the
    kernel as not generated).
    """
    if (ukernel_source is None) != (source_path is None):
        raise ValueError("load(): ukernel_source and source_path go together")
    from .threads import prepare_runtime
    prepare_runtime()                   # before the module (and libgomp) loads
    k = Kernel(spec, build.load_module(**_build_args(spec, ukernel_source, source_path)),
               source_path)
    LOADED.append(k)
    return k
