"""One function per number `weightfile bench` reports (issue 6, part 3).

Every function returns plain numbers (seconds, bytes per second, tokens per second) measured in
this process; the report puts them side by side. Throughputs are best-of-repeats, because a
shared machine only ever adds time. Nothing here changes what it measures: the same public
functions `weightfile run` and `verify` use.
"""

from __future__ import annotations

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
    """open_vqf: map the file, read and check header and directory (spec/vqf.md §9); an ENC
    file with its passphrase is also authenticated and decrypted (spec/vqf.md §4.2)."""

    def once() -> None:
        with open_vqf(path, passphrase=passphrase):
            pass

    return best_seconds(once)


#: Without the C kernel the FNV runs in pure Python (~1 MB/s): hash only this much then.
PYTHON_CHECKSUM_BYTES = 1 << 20


def checksum_rate(vqf: VQFFile) -> tuple[float, int]:
    """(bytes per second, bytes hashed) of the fast FNV-1a-64 over the covered bytes
    (spec/vqf.md §3.5).

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
    """Layer 0 of a stacked matrix: its first B(rows·cols) bytes (spec/vqf.md §7.1)."""
    e = vqf.entry(name)
    return vqf.payload(e)[: tensor_bytes(e.qtype, rows * cols)]


def layer0_decoder(vqf: VQFFile, name: str, rows: int, cols: int) -> Callable[[bytes], Any]:
    """The fast codec's float32 decode of one [rows, cols] layer of `name` (spec/vqf.md §5,
    §7.1)."""
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


@dataclass(frozen=True)
class ForwardRate:
    """Tokens per second of one engine: a prefill of `prefill_tokens`, then single-token steps."""

    engine: str  # "fast" or "ref"
    threads: int
    prefill_tokens_per_s: float
    decode_tokens_per_s: float
    method: str  # "measured", or "estimated" (see engines.py)
    prefill_tokens: int
    decode_tokens: int
    open_seconds: float | None  # binding the model (fast: open_model); None when estimated


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


def forward_rate(
    open_model: Callable[[], Any], engine: str, threads: int, vocab: int, tokens: int
) -> ForwardRate:
    """Open (timed), prefill `tokens` tokens, then decode `tokens` more, one at a time."""
    start = time.perf_counter()
    model = open_model()
    opened = time.perf_counter() - start
    prompt, steps = token_ids(vocab, tokens), token_ids(vocab, tokens, seed=7)
    prefill, per_token = time_forward(model, prompt, steps)
    return ForwardRate(
        engine, threads, tokens / prefill, 1 / per_token, "measured", tokens, tokens, opened
    )


def ref_rate(vqf: VQFFile, tokens: int) -> ForwardRate:
    """The reference: measured on small models, estimated per token above the limit."""
    from weightfile.ref.qwen3.bind_vqf import config_from_arch

    c = config_from_arch(vqf.header.arch, tied=False)
    if engines.macs_per_token(engines.matrix_shapes(vqf)) <= engines.REF_MEASURE_LIMIT:
        return forward_rate(lambda: engines.open_ref(vqf), "ref", 1, c.vocab_size, tokens)
    rate = 1 / engines.estimate_ref_token_seconds(vqf)  # ref runs token by token either way
    return ForwardRate("ref", 1, rate, rate, "estimated", 0, 0, None)
