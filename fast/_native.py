"""The one place that builds, loads and declares the C kernels (fast/csrc/*.c).

The library is compiled on first use with the system C compiler and cached by a hash of the
sources, the flags, the compiler and the machine, so an edited kernel is rebuilt and a stale one
is never loaded. Every build uses `-ffp-contract=off`: a fused multiply-add rounds once where the
reference rounds twice, which changes results (for example Q4_0 codes at exact .5 boundaries).
On aarch64 the NEON/dotprod code paths are enabled by `-march`; on x86-64 the forward-pass
products pick their AVX2 or AVX-512 + VNNI functions at run time (target attributes, CPU
check); elsewhere the portable C is used.
When no compiler is available, `library()` returns None after one clear warning, and callers fall
back to NumPy or to the reference.

Every kernel path gives the same bits (spec/numerics.md §kernel-paths); `WEIGHTFILE_ISA` forces one
(portable, avx2, avx512 on x86-64; portable, neon, dotprod on aarch64), and a path this CPU or
build cannot run is an `UnsupportedError`, never a silent fallback. `forced_isa` switches paths
inside one process (the tests run every property on every usable path).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from weightfile.spec.errors import UnsupportedError

from . import notify

CSRC = Path(__file__).with_name("csrc")
BASE_FLAGS = (
    "-O2",
    "-ffp-contract=off",
    "-fno-fast-math",
    "-fno-math-errno",
    "-fPIC",
    "-shared",
    "-std=c11",
)
#: GCC's -O2 vectorises only "very cheap" loops; the fixed 32-element block loops need this.
GCC_FLAGS = ("-fvect-cost-model=dynamic",)
#: Per-machine flags: the RK3588's Cortex-A76/A55 cores have NEON and the dotprod extension.
ARCH_FLAGS = {"aarch64": ("-march=armv8.2-a+dotprod",), "arm64": ("-march=armv8.2-a+dotprod",)}


#: WEIGHTFILE_ISA names -> the WF_ISA_* numbers of fast/csrc/cpu.h (spec/numerics.md §kernel-paths).
ISAS = {"portable": 0, "neon": 1, "dotprod": 2, "avx2": 3, "avx512": 4}
ISA_ENV = "WEIGHTFILE_ISA"
ISA_RULE = "native.isa"
_ISA_LABELS = {
    "portable": "portable C",
    "neon": "NEON",
    "dotprod": "NEON + dotprod",
    "avx2": "AVX2 + F16C",
    "avx512": "AVX-512 F/BW/VL + VNNI",
}


class NativeUnavailable(RuntimeError):
    """The C kernels could not be built here; the NumPy/Python fallback is in use."""


def compiler() -> str | None:
    """$CC if set, else the first of cc, gcc, clang on PATH."""
    if os.environ.get("CC"):
        return os.environ["CC"]
    return next((c for c in ("cc", "gcc", "clang") if shutil.which(c)), None)


def cache_dir() -> Path:
    """The compiled kernels' folder: `native/` of the one cache folder (ref/user_cache.py)."""
    from weightfile.ref.user_cache import cache_dir as user_cache_dir

    return user_cache_dir("native")


@functools.cache
def is_gcc(cc: str) -> bool:
    """True for GCC (clang rejects GCC-only flags); asks the compiler itself."""
    try:
        out = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return "clang" not in out.stdout.lower() and "free software foundation" in out.stdout.lower()


def flags(cc: str | None = None) -> tuple[str, ...]:
    extra = GCC_FLAGS if cc is not None and is_gcc(cc) else ()
    return BASE_FLAGS + extra + ARCH_FLAGS.get(platform.machine(), ())


def build(cc: str, sources: list[Path], out_dir: Path) -> Path:
    """Compile `sources` into one shared library in `out_dir`, published atomically."""
    digest = hashlib.sha256()
    for part in (cc, platform.machine(), *flags(cc)):
        digest.update(part.encode() + b"\0")
    # the headers beside the sources count too: ops_body.h is code, included once per ISA
    headers = sorted({h for src in sources for h in src.parent.glob("*.h")})
    for src in [*sources, *headers]:
        digest.update(src.name.encode() + b"\0" + src.read_bytes())
    target = out_dir / f"libweightfile-{platform.machine()}-{digest.hexdigest()[:16]}.so"
    if target.exists():
        return target
    out_dir.mkdir(parents=True, exist_ok=True)
    sweep_builds(out_dir)
    fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=".build-", suffix=".so")
    os.close(fd)
    try:
        cmd = [cc, *flags(cc), "-o", tmp, *map(str, sources), "-lm"]
        notify.compiling(f"weightfile: compiling the C kernels ({len(sources)} file(s), once)")
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise NativeUnavailable(f"{' '.join(cmd)} failed:\n{result.stderr.strip()}")
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


#: A `.build-*.so` older than this is a compile that was killed (kill -9, power loss: the
#: `finally` never ran); a live compile of the kernels takes well under a minute.
STALE_BUILD_SECONDS = 15 * 60


def sweep_builds(out_dir: Path, now: float | None = None) -> None:
    """Delete the half-written libraries that killed compiles left in the cache; a younger
    one may be another process's compile in progress and is left alone."""
    now = time.time() if now is None else now
    for stale in out_dir.glob(".build-*.so"):
        try:
            if now - stale.stat().st_mtime > STALE_BUILD_SECONDS:
                stale.unlink()
        except OSError:  # gone already (another process swept it), or not ours to delete
            pass


@functools.cache
def library() -> ctypes.CDLL | None:
    """The loaded kernel library with its prototypes declared, or None (after one warning)."""
    if os.environ.get("WEIGHTFILE_NO_NATIVE"):
        return None
    try:
        cc = compiler()
        if cc is None:
            raise NativeUnavailable("no C compiler found (set CC, or install cc/gcc/clang)")
        lib = ctypes.CDLL(str(build(cc, sorted(CSRC.glob("*.c")), cache_dir())))
    except (NativeUnavailable, OSError) as exc:
        notify.unavailable(str(exc), cache_dir())  # one line, once per cache
        return None
    _declare(lib)
    forced = os.environ.get(ISA_ENV)
    if forced:
        set_isa(lib, forced.strip().lower())
    return lib


def usable_isas(lib: ctypes.CDLL | None = None) -> list[str]:
    """The kernel paths this build can run on this CPU, portable first (spec/numerics.md
    §kernel-paths)."""
    lib = library() if lib is None else lib
    if lib is None:
        return []
    return [name for name, n in ISAS.items() if lib.wf_isa_usable(n)]


def current_isa(lib: ctypes.CDLL | None = None) -> str:
    """The name of the kernel path in use."""
    lib = library() if lib is None else lib
    if lib is None:
        return "none"
    return {n: name for name, n in ISAS.items()}[lib.wf_isa()]


def set_isa(lib: ctypes.CDLL, name: str) -> None:
    """Make `name` the path of every later kernel call; `UnsupportedError` (rule native.isa)
    when it is not a path name, this CPU lacks its instructions, or this build has no kernels
    for it (spec/numerics.md §kernel-paths)."""
    usable = ", ".join(usable_isas(lib))
    if name not in ISAS:
        raise UnsupportedError(
            ISA_RULE, f"{ISA_ENV}={name!r} is not one of {', '.join(ISAS)} (usable here: {usable})"
        )
    if lib.wf_set_isa(ISAS[name]) == 0:
        return
    label = _ISA_LABELS[name]
    why = (
        f"this build has no {label} kernels"
        if lib.wf_isa_cpu(ISAS[name])
        else f"this CPU ({platform.machine()}) lacks {label}"
    )
    raise UnsupportedError(ISA_RULE, f"{ISA_ENV}={name}: {why} (usable here: {usable})")


def each_isa() -> Iterator[str]:
    """Yield every usable path's name with that path in force, then restore the one before
    (the fast == ref properties compare each path with one reference result)."""
    for name in usable_isas():
        with forced_isa(name):
            yield name


@contextmanager
def forced_isa(name: str) -> Iterator[None]:
    """Run the body on kernel path `name`, then restore the previous one. Not for use while
    another thread is inside a kernel call (the path is one process-wide setting)."""
    lib = library()
    if lib is None:
        raise NativeUnavailable("no C kernels to force a path on")
    before = current_isa(lib)
    set_isa(lib, name)
    try:
        yield
    finally:
        set_isa(lib, before)


def _declare(lib: ctypes.CDLL) -> None:
    """Every prototype, in one block."""
    f32p = np.ctypeslib.ndpointer(np.float32, flags="C_CONTIGUOUS")
    u8p = np.ctypeslib.ndpointer(np.uint8, flags="C_CONTIGUOUS")
    i64, i32 = ctypes.c_int64, ctypes.c_int32
    # fnv1a64.c
    lib.wf_fnv1a64.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint64)
    lib.wf_fnv1a64.restype = ctypes.c_uint64
    # membw.c: sum of n uint64 words (the read-bandwidth probe of the bench and benchmarks/)
    lib.wf_membw_read.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
    lib.wf_membw_read.restype = ctypes.c_uint64
    # mul_add_peak.c: steps -> 0.5 x lanes x steps (the separate mul + add peak probe of the bench)
    lib.wf_mul_add_peak.argtypes = (ctypes.c_int64,)
    lib.wf_mul_add_peak.restype = ctypes.c_double
    # vqf_codecs.c; the quantizers return 1 when the input held NaN/Inf
    lib.vqf_q8_0_quantize.argtypes = (f32p, i64, i32, i32, u8p)  # x, ngroups, group, mode, out
    lib.vqf_q8_0_quantize.restype = i32
    lib.vqf_q4_0_quantize.argtypes = (f32p, i64, i32, i32, u8p)  # x, nblocks, mode, as_int8, out
    lib.vqf_q4_0_quantize.restype = i32
    for name in ("vqf_q8_0_dequantize", "vqf_q4_0_dequantize"):
        getattr(lib, name).argtypes = (u8p, i64, f32p)
        getattr(lib, name).restype = None
    _declare_forward(lib, i64, i32)
    _declare_layers(lib, i64, i32)
    _declare_vision(lib, i64, i32)
    _declare_ninfer(lib, i64, i32)


class WfMatrix(ctypes.Structure):
    """`wf_matrix` of fast/csrc/wf_kernels.h: a weight matrix in its file encoding."""

    _fields_ = (
        ("data", ctypes.c_void_p),
        ("rows", ctypes.c_int64),
        ("cols", ctypes.c_int64),
        ("kind", ctypes.c_int32),
        ("group_rows", ctypes.c_int32),
        ("chunk_bytes", ctypes.c_int32),
        ("xor_mask", ctypes.c_int32),
        ("group_stride", ctypes.c_int64),
    )


class WfLayer(ctypes.Structure):
    """`wf_layer` of fast/csrc/layers.c: one decoder layer's matrices (q, k, v, o, gate, up,
    down), whether each takes activation codes, and its four norm vectors."""

    _fields_ = (
        ("mat", ctypes.c_void_p * 7),
        ("codes", ctypes.c_int32 * 7),
        ("attn_norm", ctypes.c_void_p),
        ("q_norm", ctypes.c_void_p),
        ("k_norm", ctypes.c_void_p),
        ("ffn_norm", ctypes.c_void_p),
    )


def _declare_forward(lib: ctypes.CDLL, i64: object, i32: object) -> None:
    """The forward-pass kernels (qmatvec.c, model_ops.c, wf_common.c, cpu.c, ...). Their arrays
    are passed as addresses (`address`): a decode step makes dozens of calls on small arrays,
    where the ndpointer checks cost more than the kernels. Callers hand in C-contiguous arrays of
    the dtype in each comment, which they allocate themselves."""
    p, f32 = ctypes.c_void_p, ctypes.c_float
    lib.wf_simd_path.argtypes = ()
    lib.wf_simd_path.restype = i32
    for name in ("wf_isa_cpu", "wf_isa_usable", "wf_set_isa"):  # WF_ISA_* in, int32 out
        getattr(lib, name).argtypes = (i32,)
        getattr(lib, name).restype = i32
    lib.wf_isa.argtypes = ()
    lib.wf_isa.restype = i32
    lib.wf_threads_for.argtypes = (i32, i64, i64)  # threads asked, work, least work per thread
    lib.wf_threads_for.restype = i32
    lib.wf_quantize_activation.argtypes = (p, i64, p, p)  # x f32, n, codes i8, scales f32
    lib.wf_quantize_activation.restype = None
    # matrix, codes i8 [T, cols], scales f32 [T, cols/32], T, y f32 [T, rows], threads
    lib.wf_matmat_q8_activation.argtypes = (p, p, p, i64, p, i32)
    lib.wf_matmat_q8_activation.restype = None
    # matrices (wf_matrix *[count]), count, codes, scales, T, ys (float *[count]), threads
    lib.wf_matmat_q8_activation_set.argtypes = (p, i32, p, p, i64, p, i32)
    lib.wf_matmat_q8_activation_set.restype = None
    lib.wf_matmat_f32.argtypes = (p, p, i64, p, i32)  # matrix, x f32 [T, cols], T, y, threads
    lib.wf_matmat_f32.restype = None
    lib.wf_rmsnorm_rows.argtypes = (p, i64, i64, p, f32, p)  # x, rows, n, w, eps, out (f32)
    lib.wf_rmsnorm_rows.restype = None
    # x, tokens, heads, head_dim, w, eps, cos, sin [T, head_dim/2], normed, rotated (all f32)
    lib.wf_norm_rope.argtypes = (p, i64, i64, i64, p, f32, p, p, p, p)
    lib.wf_norm_rope.restype = None
    lib.wf_swiglu.argtypes = (p, p, i64, p)  # gate, up, n, out (f32)
    lib.wf_swiglu.restype = None
    # x, rows, n, w, eps, out f32, codes i8, scales f32 / gate, up, n, out f32, codes, scales
    lib.wf_rmsnorm_quantize.argtypes = (p, i64, i64, p, f32, p, p, p)
    lib.wf_rmsnorm_quantize.restype = None
    lib.wf_swiglu_quantize.argtypes = (p, p, i64, p, p, p)
    lib.wf_swiglu_quantize.restype = None
    lib.wf_exp_array.argtypes = (p, i64, p)  # x, n, out (f32)
    lib.wf_exp_array.restype = None
    lib.wf_exp.argtypes = (f32,)
    lib.wf_exp.restype = f32
    # q, keys, values (f32), positions, row stride, heads, kv heads, head_dim, scores, out (f32)
    lib.wf_attend.argtypes = (p, p, p, i64, i64, i64, i64, i64, p, p)
    lib.wf_attend.restype = None
    # the same on one layer of a head-major cache [kv_heads, capacity, head_dim]: q, keys,
    # values, positions, capacity, heads, kv heads, head_dim, scores, out
    lib.wf_attend_planes.argtypes = (p, p, p, i64, i64, i64, i64, i64, p, p)
    lib.wf_attend_planes.restype = None
    # the same with kv head g last: the heads / kv_heads query heads reading g (model_ops.c);
    # scores holds (heads / kv_heads) * positions floats
    lib.wf_attend_group.argtypes = (p, p, p, i64, i64, i64, i64, i64, i64, p, p)
    lib.wf_attend_group.restype = None


def _declare_layers(lib: ctypes.CDLL, i64: object, i32: object) -> None:
    """The whole-layer kernels of layers.c, passed addresses as `_declare_forward`'s are."""
    p, f32 = ctypes.c_void_p, ctypes.c_float
    # layers.c: layers (wf_layer[n]), n, heads, kv heads, head_dim, eps, x f32 [T, hidden] in/out,
    # T, cos, sin f32 [T, head_dim/2], keys, values f32 [n, kv heads, capacity, head_dim], capacity,
    # slots i64 [T], scratch f32, threads, min work per thread; returns 0
    lib.wf_forward_layers.argtypes = (
        p, i32, i64, i64, i64, f32, p, i64, p, p, p, p, i64, p, p, i32, i64,
    )  # fmt: skip
    lib.wf_forward_layers.restype = i32
    lib.wf_forward_scratch_floats.argtypes = (p, i64)  # layers, T
    lib.wf_forward_scratch_floats.restype = i64
    # moe.c: gate, up, down (wf_matrix*), width, codes?, x f32, xq i8, xd f32, T, count,
    # ids i32 [count], start i64 [count + 1], tok i64, weights f32, moe f32 [T, d], threads,
    # min work per thread; returns 0 (-1: out of memory, moe NaN)
    lib.wf_moe_experts.argtypes = (p, p, p, i64, i32, p, p, p, i64, i32, p, p, p, p, p, i32, i64)
    lib.wf_moe_experts.restype = i32
    lib.wf_softmax_rows.argtypes = (p, i64, i64)  # x f32 [rows, n] in place, rows, n
    lib.wf_softmax_rows.restype = None
    # attention_tiles.c: q, qd, keys, values, stride, slots i64, t0, t1, heads, kv heads,
    # head_dim, kv head g, scores f32, att f32 (every query head of kv head g of tokens [t0, t1))
    lib.wf_attend_tile.argtypes = (p, i64, p, p, i64, p, i64, i64, i64, i64, i64, i64, p, p)
    lib.wf_attend_tile.restype = None
    lib.wf_attend_head.argtypes = (p, p, p, i64, i64, i64, i64, i64, i64, p, p)
    lib.wf_attend_head.restype = None
    lib.wf_attend_queries.argtypes = (p, p, p, i64, p, p, i64, i64, p)
    lib.wf_attend_queries.restype = None
    lib.wf_attend_tile_tokens.argtypes = (i64, i64)
    lib.wf_attend_tile_tokens.restype = i64


def _declare_vision(lib: ctypes.CDLL, i64: object, i32: object) -> None:
    """The vision tower's kernels of vision.c, passed addresses as `_declare_forward`'s are."""
    p, f32 = ctypes.c_void_p, ctypes.c_float
    # vision.c: x, rows, n, w, b, eps, out (f32), threads
    lib.wf_layernorm_rows.argtypes = (p, i64, i64, p, p, f32, p, i32)
    lib.wf_layernorm_rows.restype = None
    # x f32, n, kind (0 tanh, 1 erf), guard, out f32, flags u8, threads; returns flagged count
    lib.wf_gelu.argtypes = (p, i64, i32, ctypes.c_double, p, p, i32)
    lib.wf_gelu.restype = i64
    lib.wf_rotate_rows.argtypes = (p, i64, i64, i64, i64, p, p, p, i32)
    lib.wf_rotate_rows.restype = None
    lib.wf_gelu_dd.argtypes = (ctypes.c_float, i32, p)
    lib.wf_gelu_dd.restype = None
    # q, k, v f32 [T, heads*head_dim], T, heads, head_dim, seg_of, seg_len i64 [T], out, threads
    lib.wf_attend_segments.argtypes = (p, p, p, i64, i64, i64, p, p, p, i32)
    lib.wf_attend_segments.restype = None


class WfNfMatrix(ctypes.Structure):
    """`wf_nf_matrix` of fast/csrc/ninfer.c: rows [row0, row0 + rows) of one `.ninfer` object in
    its payload encoding."""

    _fields_ = (
        ("data", ctypes.c_void_p),
        ("lut", ctypes.c_void_p),
        ("row0", ctypes.c_int64),
        ("rows", ctypes.c_int64),
        ("cols", ctypes.c_int64),
        ("kind", ctypes.c_int32),
        ("code_bits", ctypes.c_int32),
        ("group", ctypes.c_int32),
        ("base_bytes", ctypes.c_int32),
        ("high_bytes", ctypes.c_int32),
        ("base_bits", ctypes.c_int32),
        ("gpr", ctypes.c_int64),
        ("high_offset", ctypes.c_int64),
        ("scale_offset", ctypes.c_int64),
    )


class WfQ35Gdn(ctypes.Structure):
    """`wf_q35_gdn` of fast/csrc/qwen35_layer.h: one Gated DeltaNet layer's constants."""

    _fields_ = (
        ("conv_w", ctypes.c_void_p),
        ("a_exp", ctypes.c_void_p),
        ("dt_bias", ctypes.c_void_p),
        ("norm_w", ctypes.c_void_p),
        ("kernel", ctypes.c_int64),
        ("hv", ctypes.c_int64),
        ("hk", ctypes.c_int64),
        ("dk", ctypes.c_int64),
        ("dv", ctypes.c_int64),
        ("eps", ctypes.c_float),
        ("l2_eps", ctypes.c_float),
    )


class WfQ35Attention(ctypes.Structure):
    """`wf_q35_attention` of fast/csrc/qwen35_layer.h: one full-attention layer's constants."""

    _fields_ = (
        ("q_norm", ctypes.c_void_p),
        ("k_norm", ctypes.c_void_p),
        ("heads", ctypes.c_int64),
        ("kv_heads", ctypes.c_int64),
        ("head_dim", ctypes.c_int64),
        ("rot_half", ctypes.c_int64),
        ("eps", ctypes.c_float),
    )


class WfQ35Products(ctypes.Structure):
    """`wf_q35_products` of fast/csrc/qwen35_layer.h: a fixed set of products (ProductSet)."""

    _fields_ = (
        ("segs", ctypes.c_void_p),
        ("first", ctypes.c_void_p),
        ("offset", ctypes.c_void_p),
        ("ldy", ctypes.c_void_p),
        ("count", ctypes.c_int64),
        ("width", ctypes.c_int64),
        ("cols", ctypes.c_int64),
    )


class WfQ35Layer(ctypes.Structure):
    """`wf_q35_layer` of fast/csrc/qwen35_forward.c: one layer with a dense FFN, bound."""

    _fields_ = (
        ("attention", ctypes.c_int32),
        ("mixer", ctypes.c_void_p),
        ("input_norm", ctypes.c_void_p),
        ("post_norm", ctypes.c_void_p),
        ("mix_in", ctypes.c_void_p),
        ("mix_out", ctypes.c_void_p),
        ("gate_up", ctypes.c_void_p),
        ("down", ctypes.c_void_p),
        ("parts", ctypes.c_int64),
        ("last", ctypes.c_int64),
    )


def _declare_ninfer(lib: ctypes.CDLL, i64: object, i32: object) -> None:
    """The `.ninfer` Qwen3.5 kernels of ninfer.c, passed addresses as `_declare_forward`'s are."""
    p = ctypes.c_void_p
    # matrix (wf_nf_matrix), x f32 [T, cols], T, y f32 (row stride ldy), ldy, threads
    lib.wf_nf_matmat.argtypes = (p, p, i64, p, i64, i32)
    lib.wf_nf_matmat.restype = None
    # matrices (wf_nf_matrix *[count]), count, x, T, ys (float *[count]), ldys i64 [count], threads
    lib.wf_nf_matmat_set.argtypes = (p, i64, p, i64, p, p, i32)
    lib.wf_nf_matmat_set.restype = None
    # states f32 [hv, dk, dv], q, k f32 [hk, dk], v f32 [hv, dv], decay, beta f32 [hv], hv, hk,
    # dk, dv, out f32 [hv, dv]; returns 0 (1: out of memory, nothing changed)
    lib.wf_gdn_step.argtypes = (p, p, p, p, p, p, i64, i64, i64, i64, p)
    lib.wf_gdn_step.restype = i32
    # the same with T [T, ...] tokens of one sequence first and the threads last (heads on the pool)
    lib.wf_gdn_steps.argtypes = (p, p, p, p, p, p, i64, i64, i64, i64, i64, p, i32)
    lib.wf_gdn_steps.restype = i32
    # qr f32 [T, qd], qd, keys, values f32 [capacity, kvd], kvd, slots i64 [T], T, heads,
    # kv_heads, head_dim, att f32 [T, qd], threads (layers.c)
    lib.wf_attend_tokens.argtypes = (p, i64, p, p, i64, p, i64, i64, i64, i64, p, i32)
    lib.wf_attend_tokens.restype = None
    # x f32 [rows, n], rows, n, out f32 [rows]: each row's spec/numerics.md §lanes8-tree sum
    lib.wf_lanes8_rows.argtypes = (p, i64, i64, p)
    lib.wf_lanes8_rows.restype = None
    # seq f32 [T + kernel − 1, C], w f32 [kernel, C], T, C, kernel, out f32 [T, C]
    lib.wf_gdn_conv.argtypes = (p, p, i64, i64, i64, p)
    lib.wf_gdn_conv.restype = None
    # x f32 [n], n, out f32 [n]: spec/numerics.md §softplus
    lib.wf_softplus_array.argtypes = (p, i64, p)
    lib.wf_softplus_array.restype = None
    # layer (wf_q35_gdn), proj f32 [T, ld] (q|k|v, z, a, b), ld, T, window f32 [kernel − 1, C],
    # states f32 [hv, dk, dv], out f32 (conv, q, k, beta, g, core, normed), threads (value
    # heads), token_threads (the per-token parts); returns 0 (1: out of memory) (qwen35_layer.c)
    lib.wf_q35_gdn_mix.argtypes = (p, p, i64, i64, p, p, p, i32, i32)
    lib.wf_q35_gdn_mix.restype = i32
    # layer (wf_q35_attention), proj f32 [T, ld] (q, gate, k, v), ld, T, cos, sin f32 [T, rot/2],
    # keys, values f32 [capacity, kvd], slots i64 [T], out f32 (qn, kn, qr, kr, att, gated),
    # threads (attention), token_threads (the per-token parts) (qwen35_layer.c)
    lib.wf_q35_attention_mix.argtypes = (p, p, i64, i64, p, p, p, p, p, p, i32, i32)
    lib.wf_q35_attention_mix.restype = None
    # layers (wf_q35_layer [n]), n, hidden, T: floats of scratch (qwen35_forward.c)
    lib.wf_q35_forward_scratch_floats.argtypes = (p, i32, i64, i64)
    lib.wf_q35_forward_scratch_floats.restype = i64
    # layers, n, hidden, eps, x f32 [T, hidden] (in place), T, cos, sin f32 [T, rot/2], slots
    # i64 [T], window / states / keys / values (float *[n]), scratch, threads, min_work;
    # returns 0 (1: out of memory)
    f32, caches = ctypes.c_float, (p, p, p, p)  # window, states, keys, values
    lib.wf_q35_forward_layers.argtypes = (p, i32, i64, f32, p, i64, p, p, p, *caches, p, i32, i64)
    lib.wf_q35_forward_layers.restype = i32
    # gate_up, down (wf_q35_products *[E]), x f32 [T, d], T, d, count, ids i32, start i64
    # [count + 1], tok i64, wt f32, out f32 [T, d] (zeroed), threads, min_work (qwen35_moe.c)
    lib.wf_q35_experts.argtypes = (p, p, p, i64, i64, i32, p, p, p, p, p, i32, i64)
    lib.wf_q35_experts.restype = i32


def address(a: np.ndarray) -> int:
    """The data address of a C-contiguous array, for the forward kernels' pointer arguments
    (through the buffer protocol when writable: a few times cheaper than `a.ctypes.data`)."""
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(a))
    except (TypeError, ValueError):
        return a.ctypes.data
