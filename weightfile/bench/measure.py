"""One function per number `weightfile bench` reports (issue 6, part 3).

Every function returns plain numbers (seconds, bytes per second, tokens per second) measured in
this process; the report puts them side by side. Throughputs of the file, codec and matvec rows
are best-of-repeats, because a shared machine only ever adds time; the pp/tg test rows keep
every repetition and report their mean ± sample stddev, as llama-bench does. Nothing here
changes what it measures: the same public functions `weightfile run` and `verify` use.
"""

from __future__ import annotations

import copy
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from weightfile.fast._native import library
from weightfile.fast.codecs.vqf import codec as vqf_codec
from weightfile.fast.vqf.fnv1a64 import file_checksum, fnv1a64
from weightfile.ref.vqf.read import VQFFile, open_vqf
from weightfile.spec.codecs.vqf.registry import codec_for
from weightfile.spec.vqf.qtypes import tensor_bytes

from . import engines

MIN_SECONDS = 0.2  # repeat a timed call until this much time has passed (at least REPEATS)
REPEATS = 3


def best_seconds(fn: Callable[[], object], repeats: int | None = None) -> float:
    """The fastest of at least `repeats` (default REPEATS) calls, and of MIN_SECONDS in all."""
    repeats = REPEATS if repeats is None else repeats
    best, spent, n = float("inf"), 0.0, 0
    while n < repeats or spent < MIN_SECONDS:
        start = time.perf_counter()
        fn()
        took = time.perf_counter() - start
        best, spent, n = min(best, took), spent + took, n + 1
    return best


def open_seconds(path: str | os.PathLike[str], passphrase: bytes | None = None) -> float:
    """open_vqf: map the file, read and check header and directory (spec/vqf.md §loader-chain); an
    ENC file with its passphrase is also authenticated and decrypted (spec/vqf.md §sm4-hmac)."""

    def once() -> None:
        with open_vqf(path, passphrase=passphrase):
            pass

    return best_seconds(once)


#: Without the C kernel the FNV runs in pure Python (~1 MB/s): hash only this much then.
PYTHON_CHECKSUM_BYTES = 1 << 20


def checksum_rate(vqf: VQFFile) -> tuple[float, int]:
    """(bytes per second, bytes hashed) of the fast FNV-1a-64 over the covered bytes
    (spec/vqf.md §fnv-trailer).

    One pass over the whole directory and data region; without a C compiler the fallback is
    the reference loop, timed on the first PYTHON_CHECKSUM_BYTES of the data region only.
    """
    if library() is None:
        piece = vqf.data_region()[:PYTHON_CHECKSUM_BYTES]
        start = time.perf_counter()
        fnv1a64(piece)
        return len(piece) / (time.perf_counter() - start), len(piece)
    covered = len(vqf.directory_bytes()) + len(vqf.data_region())
    start = time.perf_counter()
    file_checksum(vqf)
    return covered / (time.perf_counter() - start), covered


def layer0_payload(vqf: VQFFile, name: str, rows: int, cols: int) -> memoryview:
    """Layer 0 of a stacked matrix: its first B(rows·cols) bytes (spec/vqf.md §text-tensors)."""
    e = vqf.entry(name)
    return vqf.payload(e)[: tensor_bytes(e.qtype, rows * cols)]


def layer0_decoder(vqf: VQFFile, name: str, rows: int, cols: int) -> Callable[[bytes], Any]:
    """The fast codec's float32 decode of one [rows, cols] layer of `name` (spec/vqf.md §encodings,
    §text-tensors)."""
    e = vqf.entry(name)
    codec = codec_for(e.qtype, vqf.header.flags, name, shape=(rows, cols))
    decode = vqf_codec(codec).decode
    return lambda payload: decode(payload, rows, cols)


def dequantize_layer0(vqf: VQFFile, name: str, rows: int, cols: int) -> np.ndarray:
    """Layer 0 of `name` as float32 [rows, cols]."""
    return layer0_decoder(vqf, name, rows, cols)(bytes(layer0_payload(vqf, name, rows, cols)))


def dequantize_rate(vqf: VQFFile, name: str, rows: int, cols: int) -> float:
    """Encoded bytes per second of the fast codec's decode of one layer to float32 [rows, cols]."""
    decode = layer0_decoder(vqf, name, rows, cols)
    payload = bytes(layer0_payload(vqf, name, rows, cols))
    return len(payload) / best_seconds(lambda: decode(payload))


@dataclass(frozen=True)
class MatvecRate:
    """One matrix name at its real shape: weight bytes read per second by the fast matvec, swept
    over every layer's matrix of that name (weight_bytes is one of them)."""

    name: str
    rows: int
    cols: int
    weight_bytes: int
    bytes_per_second: dict[int, float]  # threads -> rate


def matvec_rates(
    vqf: VQFFile, shapes: dict[str, tuple[int, int, int]], threads: Sequence[int]
) -> list[MatvecRate] | None:
    """GB/s of weights read by `matrix_from_entry(...).matvec` per shape; None without fast.

    Each rate is one sweep over every layer's matrix of that name, as a decoded token reads
    them: a single 1-3 MB layer matrix timed over and over would be read from the last-level
    cache (32 MB on the development VM) and report more than the memory can deliver.
    """
    matrix_from_entry = engines.fast_matrix_from_entry()
    if matrix_from_entry is None:
        return None
    out = []
    for name, (rows, cols, count) in shapes.items():
        mats = [matrix_from_entry(vqf, name, rows, cols, layer=i) for i in range(count)]
        x = np.linspace(-1, 1, cols, dtype=np.float32)

        def sweep(n: int, mats: list[Any] = mats, x: np.ndarray = x) -> None:
            for m in mats:
                m.matvec(x, threads=n)

        swept = sum(m.nbytes for m in mats)
        rates = {n: swept / best_seconds(lambda n=n, sweep=sweep: sweep(n)) for n in threads}
        out.append(MatvecRate(name, rows, cols, int(mats[0].nbytes), rates))
    return out


def token_ids(vocab: int, count: int, seed: int = 6) -> list[int]:
    """Deterministic ids spread over the vocabulary (the speed does not depend on which)."""
    return [int(t) for t in np.random.default_rng(seed).integers(0, vocab, count)]


def time_forward(model: Any, prompt: list[int], steps: list[int]) -> tuple[float, float]:
    """(prefill seconds, decode seconds per token) of `model` on a fresh cache."""
    cache = model.new_cache()
    start = time.perf_counter()
    model.forward(prompt, cache)
    prefill = time.perf_counter() - start
    start = time.perf_counter()
    for t in steps:
        model.forward([t], cache)
    return prefill, (time.perf_counter() - start) / max(len(steps), 1)


@dataclass(frozen=True)
class BenchRow:
    """One llama-bench-style test of one engine at one thread count: `pp<N>` processes an N-token
    prompt in one call on an empty cache, `tg<N>` generates N tokens one call each from an empty
    cache (llama-bench's two tests); with `n_depth` D > 0 the cache first holds D untimed prompt
    tokens (`pp<N> @ d<D>`, llama-bench's -d). `samples` holds tokens per second of each
    repetition."""

    engine: str  # "fast" or "ref"
    threads: int
    test: str  # "pp512", "tg128"
    n_prompt: int
    n_gen: int
    method: str  # "measured", or "estimated" (the reference on a real-size model)
    samples: tuple[float, ...]
    profile: str = "canonical"  # the numerics profile the engine ran (weightfile/profiles.py)
    n_depth: int = 0  # tokens in the cache before the timed test (llama-bench's -d)

    @property
    def avg_tokens_per_s(self) -> float:
        return sum(self.samples) / len(self.samples)

    @property
    def stddev_tokens_per_s(self) -> float | None:
        """The sample standard deviation (n - 1), as llama-bench reports it; None for one sample."""
        n = len(self.samples)
        if n < 2:
            return None
        mean = self.avg_tokens_per_s
        return math.sqrt(sum((v - mean) ** 2 for v in self.samples) / (n - 1))


def label_of(n_prompt: int, n_gen: int, n_depth: int = 0) -> str:
    """llama-bench's test name: "pp512", "tg128", and at a depth "tg128 @ d1024"."""
    name = f"pp{n_prompt}" if n_prompt else f"tg{n_gen}"
    return f"{name} @ d{n_depth}" if n_depth else name


#: Seed of the depth fill's ids (any ids do: the speed does not depend on which).
DEPTH_SEED = 4


def sized_cache(model: Any, positions: int) -> Any:
    """A fresh cache with room for `positions` tokens when the engine's cache grows (its
    `reserve`): llama.cpp allocates its context (n_ctx = depth + prompt + generated) before any
    timing, so a timed run here does not pay for growing the cache either."""
    cache = model.new_cache()
    reserve = getattr(cache, "reserve", None)
    if reserve is not None:
        reserve(positions)
    return cache


def depth_cache(model: Any, vocab: int, n_depth: int, room: int = 0) -> Any:
    """A fresh cache holding `n_depth` prompt tokens, prefilled in one call as llama-bench fills
    its -d depth (one batch up to its n_batch of 2048), with room for `room` more; an empty one
    for 0."""
    cache = sized_cache(model, n_depth + room)
    if n_depth:
        engines.forward_prompt(model, token_ids(vocab, n_depth, DEPTH_SEED), cache)
    return cache


def repetition_seconds(
    model: Any, vocab: int, n_prompt: int, n_gen: int, seed: int, filled: Any = None
) -> float:
    """Seconds of one repetition: the prompt in one call, or n_gen single-token calls (each next
    id drawn in advance: the sampler is not what is timed), on a fresh cache or, untimed, on a
    copy of `filled` (a `depth_cache`: every repetition starts at the same depth, as llama-bench
    restores its saved state)."""
    cache = sized_cache(model, n_prompt + n_gen) if filled is None else copy.deepcopy(filled)
    if n_prompt:
        prompt = token_ids(vocab, n_prompt, seed)
        start = time.perf_counter()
        engines.forward_prompt(model, prompt, cache)  # the last row's logits, as llama-bench
        return time.perf_counter() - start
    steps = token_ids(vocab, n_gen, seed)
    start = time.perf_counter()
    for t in steps:
        model.forward([t], cache)
    return time.perf_counter() - start


def run_row(
    model: Any,
    engine: str,
    threads: int,
    vocab: int,
    n_prompt: int,
    n_gen: int,
    repetitions: int,
    tick: Callable[[], None] | None = None,
    n_depth: int = 0,
) -> BenchRow:
    """A warm-up run as llama-bench's (untimed, on an empty cache: the whole prompt for a pp
    test, one token for a tg test; it touches the pages, fills lazy buffers and, on a MoE model,
    reaches the experts a prompt routes to), the untimed depth fill when n_depth > 0, then
    `repetitions` timed runs."""
    repetition_seconds(model, vocab, n_prompt, 0 if n_prompt else 1, seed=5)
    filled = depth_cache(model, vocab, n_depth, n_prompt + n_gen) if n_depth else None
    samples = []
    for r in range(repetitions):
        took = repetition_seconds(model, vocab, n_prompt, n_gen, seed=8 + r, filled=filled)
        samples.append((n_prompt or n_gen) / took)
        if tick is not None:
            tick()
    return BenchRow(engine, threads, label_of(n_prompt, n_gen, n_depth), n_prompt, n_gen,
                    "measured", tuple(samples), n_depth=n_depth)  # fmt: skip


#: The reference decodes this many tokens at most, once: it is the oracle, timed only for the
#: fast engine's speed-up, and one of its tokens takes a second even on the tiny model.
REF_GEN = 8


def ref_row(vqf: VQFFile, n_gen: int) -> BenchRow:
    """The reference's decode row: measured (tg<min(n_gen, REF_GEN)>, one repetition) on small
    models, estimated per token above engines.REF_MEASURE_LIMIT (then labelled tg<n_gen>)."""
    from weightfile.ref.qwen3.bind_vqf import config_from_arch

    c = config_from_arch(vqf.header.arch, tied=False)
    if engines.macs_per_token(engines.matrix_shapes(vqf)) <= engines.REF_MEASURE_LIMIT:
        n = min(n_gen, REF_GEN)
        return run_row(engines.open_ref(vqf), "ref", 1, c.vocab_size, 0, n, 1)
    rate = 1 / engines.estimate_ref_token_seconds(vqf)
    return BenchRow("ref", 1, label_of(0, n_gen), 0, n_gen, "estimated", (rate,))
