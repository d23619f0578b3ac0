"""Run every bench measurement on one model and shape the result (schema `weightfile.bench/3`).

JSON schema (fields are only ever added; a removal or a change of meaning bumps the version:
/1 had one `forward` row per engine and thread count, /2 has llama-bench's one row per test).
Rates are per second; bytes are bytes (not MB); a field is null when its engine is not available.

    schema            "weightfile.bench/3"
    build             {version (the installed package's, null from a source tree),
                       commit (git's short hash of the source tree, null outside a checkout)}
    timestamp         when the run started, ISO 8601 UTC ("2026-12-01T22:40:00Z")
    machine           {description, arch, cpus, load_average_1min (null where unknown): on a
                       shared machine every rate below is only as good as this; pinned_cpus
                       (the cpulist the run was pinned to, "0-3", or null: weightfile/cpus.py)}
    model             {path, synthetic (name or null), file_bytes, params (elements of the tensors
                       the decoder binds; a synthetic model's lm_head, written from its embedding,
                       counted once, as llama-bench counts a tied model),
                       family (the projection set, "q4"/"q8"),
                       geometry {vocab, hidden, intermediate, layers, heads, kv_heads, head_dim},
                       encrypted (ENC: every open authenticates and decrypts, spec/vqf.md
                       §sm4-hmac)}
    profile           the --profile asked ("canonical", or "kestrel-board": its fast rows are
                       added beside the canonical ones, weightfile/bench/board.py)
    fast_engine       true when the family's fast model exists (the matvec rows need only
                       weightfile.fast.numerics.matrix.matrix_from_entry)
    repetitions       timed runs per test row (-r)
    open_seconds      open_vqf: map, header, directory (ENC: also the tag check and decryption)
    checksum_bytes_per_s      fast FNV-1a-64 over the covered bytes (spec/vqf.md §fnv-trailer)
    checksum_bytes_hashed     all covered bytes; 1 MiB when there is no C compiler (pure Python)
    dequantize        {tensor, rows, cols, bytes_per_s (encoded bytes)}: one layer, fast codec
    memory_bandwidth  {single_core_bytes_per_s, all_core_bytes_per_s, threads, method, buffer_bytes,
                       by_threads {threads: read bytes/s with that many threads}}
    matvec            null | [{tensor, rows, cols, weight_bytes, bytes_per_s {threads: rate},
                               single_core_bandwidth_fraction {threads: rate / single-core bw}}]
    tests             [{engine, profile (the numerics profile the row's engine ran), threads,
                        test ("pp512": a 512-token prompt in one call; "tg128":
                        128 tokens one call each; both from an empty cache, as llama-bench;
                        "tg128 @ d1024" after an untimed 1024-token prefill, llama-bench's -d),
                        n_prompt, n_gen, n_depth (tokens in the cache before the test, 0
                        without -d), method ("measured"/"estimated"), repetitions,
                        samples_tokens_per_s [one per repetition], avg_tokens_per_s,
                        stddev_tokens_per_s (sample stddev; null for one sample),
                        roofline_tokens_per_s (tg rows: by_threads bandwidth ÷ weight bytes per
                        token, the weights only: at a depth the KV cache read is not counted;
                        null for pp), roofline_fraction (avg ÷ roofline; null for pp)}]
                       the reference, when run, is one tg row at depth 0 (measured on small
                       models, at most 8 tokens once; estimated above that, see notes)
    decode_speedup    null | {threads: fast avg t/s of the first depth-0 tg test ÷ ref decode t/s}
    board_decode_ratio  --profile kestrel-board only: null | {threads: the board's fast avg t/s
                       of the first tg test ÷ the canonical fast one's, at that test's depth}
    roofline          {weight_bytes_per_token, single_core_tokens_per_s, all_core_tokens_per_s}
    moe_roofline      MoE files only: {weight_bytes_per_token (averaged over the decoded tokens:
                        shared tensors + the chosen experts' bands), all_experts_bytes_per_token,
                        decoded_tokens, tokens_per_s (single-core bandwidth ÷ those bytes)}; the
                        tg rows' rooflines then use the same bytes per token
    peak_rss          (the longest test's tokens prefilled and decoded from an empty cache: -d
                       does not deepen it)
                      null | {engine, threads, peak_rss_bytes, baseline_rss_bytes, bound_bytes,
                              bound {file_bytes, kv_cache_bytes, activation_bytes},
                              within_bound (peak ≤ baseline + bound; null when the bound is
                              below RSS_NOISE_BYTES: the interpreter's own growth would decide)}
    image_encode      Qwen3-VL files (a vision tower) only; absent otherwise
                      (weightfile/bench/vision.py): {image {side, preprocess, grid [t, gh, gw],
                       patches, tokens}, engine_asked ("ref"/"fast", --engine), engine (the one
                       that encoded it: "ref" when fast has no vision tower for this family),
                       flops_per_image {linears, attention, total} (2 per multiply-add),
                       rows [{engine, threads, method ("measured"/"estimated"), seconds (best),
                             samples_seconds, gflop_per_s (flops_per_image.total ÷ seconds),
                             profile (with --profile kestrel-board only: "canonical" or
                             "kestrel-board", the board tower's encode of the same picture)}],
                       board (--profile kestrel-board only): {image {side, preprocess "board",
                         pixels_hw, grid, patches, tokens} (the engine's preprocessing),
                         encode_ratio null | {threads: board seconds ÷ canonical fast seconds}},
                       vision_linears null | [{tensor, rows, cols, patches, engine ("fast": the C
                                               Q8_0 product alone, even when ref encoded the
                                               image), method,
                                               flops (one block's product over all patches),
                                               gflop_per_s {threads: rate}}],
                       qwen35_vision (when engine is "fast"; weightfile/bench/vision35.py):
                         {geometry {official, depth, hidden, intermediate, heads, head_dim,
                          patch, merge, out_hidden}, image {side, grid, patches, tokens},
                          flops_per_image {linears, attention, total}, rows (as rows above),
                          mul_add_peak_gflop_per_s null | one core's separate mul + add
                          peak, the bound of its F32 products (fast/csrc/mul_add_peak.c)}}
    notes             [str]: how to read estimated or missing numbers
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.fast.backend import FAST
from weightfile.ref.backend import Backend
from weightfile.ref.qwen3.bind_vqf import config_from_arch
from weightfile.ref.vqf.read import open_vqf
from weightfile.spec.errors import UnsupportedError
from weightfile.spec.numerics.profile import CANONICAL

from . import board, engines, measure, vision
from .bandwidth import DEFAULT_BUFFER, Bandwidth, reader, timed_parallel, touched_buffer
from .bandwidth import REPEATS as BW_REPEATS
from .machine import describe_machine
from .peak_rss import measure_peak_rss, rss_bound
from .progress import Progress
from .roofline import EMBED, NORMS, roofline_tokens_per_s, weight_bytes_per_token
from .vision import IMAGE_SIDE
from .vision35 import QWEN35_NOTE, qwen35_section

SCHEMA = "weightfile.bench/3"
NO_FAST = "fast forward rows: n/a (no fast engine: the C kernels are unavailable, see the warning)"
NO_FAST_MATRIX = "matvec rows: n/a (no fast engine: the C kernels are unavailable)"
ESTIMATED = (
    "ref estimated: one reference token at this size takes minutes, so its matvec was timed on "
    f"the first {engines.ESTIMATE_ROWS} rows of every matrix and scaled to all rows (norms and "
    "attention, < 1% of the work, not counted); ref prefill = ref decode (token by token)"
)
REF_DEPTH = (
    "ref: depth 0 only (the reference skips -d depths > 0: its untimed fill of that many tokens "
    "would take minutes); decode speed-up compares the fast depth-0 tg rows"
)
ENCRYPTED = (
    "encrypted model: open_seconds includes checking the HMAC-SM3 tag over the whole region and "
    "decrypting it into private memory (spec/vqf.md §4.2); the checksum row times FNV-1a-64 over "
    "the stored ciphertext (the file's trailer is the tag); every other row uses the plaintext"
)


def load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:  # not every platform has one
        return None


def geometry(c: Any) -> dict[str, int]:
    return {
        "vocab": c.vocab_size,
        "hidden": c.hidden_size,
        "intermediate": c.intermediate_size,
        "layers": c.num_hidden_layers,
        "heads": c.num_attention_heads,
        "kv_heads": c.num_key_value_heads,
        "head_dim": c.head_dim,
    }


def machine_section() -> dict[str, Any]:
    return {
        "description": describe_machine(),
        "arch": platform.machine(),
        "cpus": os.cpu_count(),
        "load_average_1min": load_average(),
    }


def model_section(path: str | os.PathLike[str], vqf: Any, synthetic: str | None) -> dict[str, Any]:
    c = config_from_arch(vqf.header.arch, tied=False)
    return {
        "path": str(path),
        "synthetic": synthetic,
        "file_bytes": Path(path).stat().st_size,
        "family": engines.projection_set_of(vqf),  # the report's key predates the word
        "geometry": geometry(c),
        "encrypted": bool(vqf.header.encrypted),
    }


def largest_layer_matrix(shapes: dict[str, tuple[int, int, int]]) -> str:
    """The per-layer matrix with the most elements (the lm_head, read once, is not a layer's)."""
    stacked = {n: rc for n, rc in shapes.items() if rc[2] > 1}
    return max(stacked, key=lambda n: stacked[n][0] * stacked[n][1])


def file_section(vqf: Any, shapes: dict[str, tuple[int, int, int]]) -> dict[str, Any]:
    """The numbers that need no forward engine: checksum and dequantize throughput."""
    name = largest_layer_matrix(shapes)
    rows, cols, _ = shapes[name]
    rate, hashed = measure.checksum_rate(vqf)
    return {
        "checksum_bytes_per_s": rate,
        "checksum_bytes_hashed": hashed,
        "dequantize": {
            "tensor": name,
            "rows": rows,
            "cols": cols,
            "bytes_per_s": measure.dequantize_rate(vqf, name, rows, cols),
        },
    }


def bandwidth_section(bw: Bandwidth, per_token: int) -> dict[str, Any]:
    return {
        "memory_bandwidth": {
            "single_core_bytes_per_s": bw.single_core,
            "all_core_bytes_per_s": bw.all_core,
            "threads": bw.threads,
            "method": bw.method,
            "buffer_bytes": bw.buffer_bytes,
        },
        "roofline": {
            "weight_bytes_per_token": per_token,
            "single_core_tokens_per_s": roofline_tokens_per_s(per_token, bw.single_core),
            "all_core_tokens_per_s": roofline_tokens_per_s(per_token, bw.all_core),
        },
    }


def thread_bandwidths(buffer_bytes: int, threads: list[int]) -> tuple[Bandwidth, dict[int, float]]:
    """The probe of bandwidth.py at 1, every cpu and each thread count of the run, on one buffer:
    a tg row's roofline uses the bandwidth of its own thread count."""
    cpus = os.cpu_count() or 1
    read, method = reader()
    words = touched_buffer(buffer_bytes)
    read(words)  # warm: page tables, the library's first call
    rates = {}
    for n in sorted({1, cpus, *threads}):
        parts = np.array_split(words, n)
        rates[n] = words.nbytes / min(timed_parallel(read, parts) for _ in range(BW_REPEATS))
    return Bandwidth(rates[1], rates[cpus], cpus, method, words.nbytes), rates


def model_params(vqf: Any, synthetic: str | None) -> int:
    """Elements of every tensor the decoder binds (what llama-bench calls params): the
    embedding, the norms and the bound family's matrices (spec/vqf.md §text-tensors). A tied
    model's lm_head is its embedding stored a second time (quantized), so it is not counted
    again, as llama-bench counts a tied GGUF (which stores no output.weight). A synthetic model
    is tied (its head is written from its embedding); a file's own q*_lm says untied
    (spec/vqf.md §decisions: the arch stores no tie flag)."""
    prefix = engines.projection_set_of(vqf) + "_"
    head = f"{prefix}lm" if synthetic is not None else None
    keep = lambda n: n == EMBED or n in NORMS or (n.startswith(prefix) and n != head)  # noqa: E731
    return sum(e.rows * e.cols for e in vqf.entries if keep(e.name))


def build_section() -> dict[str, str | None]:
    """The installed version and the source tree's commit (null where either is unknown)."""
    try:
        version: str | None = importlib.metadata.version("weightfile")
    except importlib.metadata.PackageNotFoundError:
        version = None
    root = Path(__file__).resolve().parents[2]
    try:
        done = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
                              capture_output=True, text=True, timeout=10, check=False)  # fmt: skip
        commit = done.stdout.strip() if done.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        commit = None
    return {"version": version, "commit": commit or None}


def row_dict(r: measure.BenchRow, by_threads: dict[int, float], per_token: int) -> dict[str, Any]:
    roof = roofline_tokens_per_s(per_token, by_threads[r.threads]) if r.n_gen else None
    return {
        "engine": r.engine,
        "profile": r.profile,
        "threads": r.threads,
        "test": r.test,
        "n_prompt": r.n_prompt,
        "n_gen": r.n_gen,
        "n_depth": r.n_depth,
        "method": r.method,
        "repetitions": len(r.samples),
        "samples_tokens_per_s": list(r.samples),
        "avg_tokens_per_s": r.avg_tokens_per_s,
        "stddev_tokens_per_s": r.stddev_tokens_per_s,
        "roofline_tokens_per_s": roof,
        "roofline_fraction": None if roof is None else r.avg_tokens_per_s / roof,
    }


def fast_rows(vqf: Any, plan: Plan, progress: Progress) -> list[measure.BenchRow]:
    """Every pp then tg test at each depth and thread count (`Plan.runs`), on one fast model per
    thread count."""
    vocab = int(vqf.header.arch["vocab_size"])
    rows = []
    for n in plan.threads:
        model = engines.open_fast(vqf, n)
        for n_prompt, n_gen, n_depth in plan.runs:
            progress.phase(f"fast ×{n} {measure.label_of(n_prompt, n_gen, n_depth)}")
            rows.append(measure.run_row(model, "fast", n, vocab, n_prompt, n_gen,
                                        plan.repetitions, progress.tick, n_depth))  # fmt: skip
    return rows


def depth_notes(plan: Plan, ref: bool) -> list[str]:
    """The note a run at depths > 0 with the reference's row carries (REF_DEPTH)."""
    return [REF_DEPTH] if ref and any(plan.depths) else []


def speedup_of(tests: list[dict[str, Any]]) -> dict[str, float] | None:
    """Fast ÷ ref decode tokens/s per thread count, on the first tg test of each at depth 0 (the
    reference's row is at depth 0)."""
    ref = [t for t in tests if t["engine"] == "ref"]
    fast = [t for t in tests if t["engine"] == "fast" and t["n_gen"] and not t.get("n_depth")]
    if not ref or not fast:
        return None
    first = fast[0]["n_gen"]
    rate = ref[0]["avg_tokens_per_s"]
    return {str(t["threads"]): t["avg_tokens_per_s"] / rate for t in fast if t["n_gen"] == first}


@dataclass(frozen=True)
class Plan:
    """What to run: thread counts, (n_prompt, n_gen) tests in llama-bench's order (every pp,
    then every tg), timed repetitions of each, and the depths (-d) each test runs at."""

    threads: list[int]
    prompts: list[int]
    gens: list[int]
    repetitions: int = 5
    depths: list[int] = field(default_factory=lambda: [0])

    @property
    def tests(self) -> list[tuple[int, int]]:
        return [(p, 0) for p in self.prompts] + [(0, n) for n in self.gens]

    @property
    def runs(self) -> list[tuple[int, int, int]]:
        """(n_prompt, n_gen, n_depth) of one thread count, in llama-bench's order: for each
        depth, every test."""
        return [(p, g, d) for d in self.depths for p, g in self.tests]

    @property
    def timed_runs(self) -> int:
        """Timed repetitions of one engine's tests at every thread count (the progress bar)."""
        return len(self.threads) * len(self.runs) * self.repetitions


def run_bench(
    path: str | os.PathLike[str],
    *,
    plan: Plan,
    synthetic: str | None = None,
    rss: bool = True,
    ref: bool = True,
    bandwidth_buffer: int = DEFAULT_BUFFER,
    passphrase: bytes | None = None,
    progress: bool = False,
    image_backend: Backend = FAST,
    image_side: int = IMAGE_SIDE,
    profile: str = CANONICAL.name,
) -> dict[str, Any]:
    """Every measurement of the report, in one process (the peak RSS in a child).

    On a Qwen3-VL file `image_backend` encodes one image_side² image (the `image_encode` section).
    Another `profile` than canonical adds its fast rows beside the canonical ones (pp/tg tests,
    image encode; weightfile/bench/board.py), or refuses the file before measuring.

    An encrypted model needs `passphrase`: it is authenticated and decrypted in memory at every
    open (spec/vqf.md §sm4-hmac); without it the run stops with `vqf.enc.no_key` before measuring.
    """
    started = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    fast, notes = _opening_notes(path, passphrase)
    other = _other_profile(path, passphrase, profile, fast)
    bar = Progress(plan.timed_runs * (1 + (other is not None)) * fast + int(ref), progress)
    try:
        bar.phase("memory bandwidth")
        bw, by_threads = thread_bandwidths(bandwidth_buffer, plan.threads)
        with open_vqf(path, passphrase=passphrase) as vqf:
            bound = board.bind_text(vqf, other)  # a geometry the board refuses: before timing
            shapes = engines.matrix_shapes(vqf)
            per_token = weight_bytes_per_token(vqf)
            report = _report_head(path, vqf, synthetic, started, fast, plan, passphrase, profile)
            _file_sections(report, vqf, shapes, bw, by_threads, per_token, plan, bar)
            rows = _test_rows(vqf, plan, bar, ref, fast) + board.text_rows(vqf, bound, plan, bar)
            if vqf.header.is_moe and fast:  # only the chosen experts' bands are read (issue 17)
                bar.phase("experts chosen per decoded token")
                report["moe_roofline"] = moe_section(vqf, plan, bw.single_core)
                per_token = round(report["moe_roofline"]["weight_bytes_per_token"])
            if vision.is_vision_file(vqf):  # issue 18 item 8: the image-encode rows
                bar.phase(f"image encode ({image_backend.name})")
                notes += _image_encode(report, vqf, image_backend, plan, image_side)
                notes += _board_image(report, vqf, other, plan, image_side, bar)
            c = config_from_arch(vqf.header.arch, tied=False)
            measurable = engines.macs_per_token(shapes) <= engines.REF_MEASURE_LIMIT
        estimated = ref and rows[0].method == "estimated"
        notes += [ESTIMATED] * estimated + depth_notes(plan, ref)
        report["tests"] = [row_dict(r, by_threads, per_token) for r in rows]
        report["decode_speedup"] = speedup_of(report["tests"])
        notes += board.add_decode_ratio(report, other)
        report["peak_rss"] = None
        if rss:
            bar.phase("peak RSS (child process)")
            notes += _peak_rss(report, path, c, plan, fast, measurable, passphrase)
    finally:
        bar.close()
    report["notes"] = notes
    return report


def _other_profile(
    path: str | os.PathLike[str], passphrase: bytes | None, profile: str, fast: bool
) -> Any | None:
    """The profile row whose rows go beside the canonical ones (None for canonical); its typed
    refusal of the file's family, or of a machine without the C kernels, before measuring."""
    if profile == CANONICAL.name:
        return None
    with open_vqf(path, passphrase=passphrase) as vqf:
        row = board.profile_for(vqf, profile)
    if not fast:
        raise UnsupportedError(
            "frontend.profile.unsupported",
            f"bench --profile {profile} times the fast {profile} engine, which needs the C "
            "kernels (no compiler here)",
            path="--profile",
        )
    return row


def _opening_notes(
    path: str | os.PathLike[str], passphrase: bytes | None
) -> tuple[bool, list[str]]:
    """Whether the fast engine is there, and the notes the report starts with; an ENC model
    without its passphrase stops here (`vqf.enc.no_key`), before any measurement."""
    fast = engines.fast_open_model() is not None
    notes = [] if fast else [NO_FAST]
    if engines.fast_matrix_from_entry() is None:
        notes.append(NO_FAST_MATRIX)
    with open_vqf(path, passphrase=passphrase) as vqf:
        vqf.plaintext_region()  # an ENC model without its passphrase fails here, not midway
        if vqf.header.encrypted:
            notes.append(ENCRYPTED)
    return fast, notes


def _report_head(
    path: str | os.PathLike[str],
    vqf: Any,
    synthetic: str | None,
    started: str,
    fast: bool,
    plan: Plan,
    passphrase: bytes | None,
    profile: str,
) -> dict[str, Any]:
    """The report's first members: what was measured (under which --profile), where, when, and
    the open time."""
    return {
        "schema": SCHEMA,
        "build": build_section(),
        "timestamp": started,
        "machine": machine_section(),
        # a synthetic model's head is its embedding (synthetic.py): tied, as Qwen3-0.6B's is
        "model": {**model_section(path, vqf, synthetic), "params": model_params(vqf, synthetic)},
        "profile": profile,
        "fast_engine": fast,
        "repetitions": plan.repetitions,
        "open_seconds": measure.open_seconds(path, passphrase),
    }


def _file_sections(
    report: dict[str, Any],
    vqf: Any,
    shapes: dict[str, tuple[int, int, int]],
    bw: Bandwidth,
    by_threads: dict[int, float],
    per_token: int,
    plan: Plan,
    bar: Progress,
) -> None:
    """The checksum and dequantize timings, the memory bandwidth and the matvec rows."""
    bar.phase("checksum, dequantize")
    report.update(file_section(vqf, shapes))
    report.update(bandwidth_section(bw, per_token))
    report["memory_bandwidth"]["by_threads"] = {str(n): v for n, v in by_threads.items()}
    bar.phase("matvec")
    report["matvec"] = matvec_rows(vqf, shapes, plan.threads, bw.single_core)


def _test_rows(
    vqf: Any, plan: Plan, bar: Progress, ref: bool, fast: bool
) -> list[measure.BenchRow]:
    """The reference's decode row (timed or estimated), then the fast engine's pp and tg rows
    at each thread count."""
    rows = []
    if ref:
        bar.phase("ref")
        rows.append(measure.ref_row(vqf, max(plan.gens, default=measure.REF_GEN)))
        bar.tick()
    rows += fast_rows(vqf, plan, bar) if fast else []
    return rows


def _image_encode(
    report: dict[str, Any], vqf: Any, image_backend: Backend, plan: Plan, image_side: int
) -> list[str]:
    """The `image_encode` section of a Qwen3-VL file; returns its notes."""
    report["image_encode"], image_notes = image_encode(
        vqf, image_backend, plan.threads, plan.repetitions, image_side
    )
    return image_notes


def image_encode(
    vqf: Any, backend: Backend, threads: list[int], repetitions: int, side: int = IMAGE_SIDE
) -> tuple[dict[str, Any], list[str]]:
    """vision.image_section and, beside a fast encode, the same image through the Qwen3.5 tower
    (`qwen35_vision`, weightfile/bench/vision35.py; issue 29)."""
    section, notes = vision.image_section(vqf, backend, threads, repetitions, side)
    if section["engine"] == FAST.name:
        c = vision.tower_config(vqf.header.arch)
        reps = min(repetitions, vision.MAX_REPETITIONS)
        section["qwen35_vision"] = qwen35_section(c, side, threads, reps)
        notes.append(QWEN35_NOTE)
    return section, notes


def _board_image(
    report: dict[str, Any], vqf: Any, other: Any, plan: Plan, image_side: int, bar: Progress
) -> list[str]:
    """--profile kestrel-board on a Qwen3-VL file: the board tower's encode rows beside the
    canonical ones (weightfile/bench/board.py); returns their note."""
    if other is None:
        return []
    bar.phase(f"image encode ({other.name})")
    board.add_image_rows(report["image_encode"], vqf, plan.threads, plan.repetitions, image_side)
    return [board.BOARD_IMAGE]


def _peak_rss(
    report: dict[str, Any],
    path: str | os.PathLike[str],
    c: Any,
    plan: Plan,
    fast: bool,
    measurable: bool,
    passphrase: bytes | None,
) -> list[str]:
    """The `peak_rss` row, measured in a child process; returns its notes."""
    file_bytes = report["model"]["file_bytes"]
    tokens = max([*plan.prompts, *plan.gens, 1])
    report["peak_rss"] = peak_rss_row(path, c, file_bytes, plan.threads, tokens, fast,
                                      measurable, passphrase)  # fmt: skip
    if report["peak_rss"] is None:
        return ["peak RSS: n/a (no fast engine, and the reference is too slow here)"]
    if report["peak_rss"]["within_bound"] is None:
        return [RSS_TINY]
    return []


def moe_section(vqf: Any, plan: Plan, single_core: float) -> dict[str, float]:
    """The MoE roofline: bytes actually read per decoded token (attention, router, norms, the
    chosen experts' bands; weightfile/bench/moe_bytes.py), averaged over a greedy decode."""
    from . import moe_bytes

    model = engines.open_fast(vqf, 1)
    steps = max([*plan.gens, 1])
    prompt = measure.token_ids(int(vqf.header.arch["vocab_size"]), max([*plan.prompts, 1]))
    chosen = moe_bytes.decoded_experts(model, prompt, steps)
    return moe_bytes.moe_roofline(vqf, chosen, single_core)


def matvec_rows(
    vqf: Any, shapes: dict[str, tuple[int, int, int]], threads: list[int], single_bw: float
) -> list[dict[str, Any]] | None:
    rates = measure.matvec_rates(vqf, shapes, threads)
    if rates is None:
        return None
    return [
        {
            "tensor": r.name,
            "rows": r.rows,
            "cols": r.cols,
            "weight_bytes": r.weight_bytes,
            "bytes_per_s": {str(n): v for n, v in r.bytes_per_second.items()},
            "single_core_bandwidth_fraction": {
                str(n): v / single_bw for n, v in r.bytes_per_second.items()
            },
        }
        for r in rates
    ]


#: Below this bound (file + KV cache + activations) the peak-RSS verdict is not given: the
#: interpreter's own allocations between the baseline and the peak (the allocator's arenas, NumPy
#: temporaries; a few MB on the development machine) would decide it, not the model.
RSS_NOISE_BYTES = 32 << 20
RSS_TINY = (
    "peak RSS: no verdict against the bound, which is below 32 MiB for this model: the "
    "interpreter's own growth of a few MB, not the model, would decide it"
)


def peak_rss_row(
    path: str | os.PathLike[str],
    c: Any,
    file_bytes: int,
    threads: list[int],
    tokens: int,
    fast: bool,
    ref_measurable: bool,
    passphrase: bytes | None = None,
) -> dict[str, Any] | None:
    """The child-process peak against the issue's bound: fast at the most threads, else ref
    (only where the reference is measured, not estimated)."""
    if not fast and not ref_measurable:
        return None
    engine, n = ("fast", max(threads)) if fast else ("ref", 1)
    got = measure_peak_rss(path, engine, n, tokens, passphrase)
    bound = rss_bound(file_bytes, c, positions=2 * tokens, prefill=tokens)
    peak, base = int(got["peak_rss_bytes"]), int(got["baseline_rss_bytes"])
    verdict = peak <= base + bound.total if bound.total >= RSS_NOISE_BYTES else None
    return {
        "engine": engine,
        "threads": n,
        "peak_rss_bytes": peak,
        "baseline_rss_bytes": base,
        "bound_bytes": bound.total,
        "bound": asdict(bound),
        "within_bound": verdict,
    }
