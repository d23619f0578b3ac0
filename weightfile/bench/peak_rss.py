"""Peak resident memory of a forward run, measured in a child process (issue 6, "Memory").

The issue's bound: peak RSS ≤ file size + KV cache + a small multiple of the largest layer's
activations. A fresh child runs only open → prefill → decode, so nothing the bench itself
allocated (bandwidth buffers, dequantized test matrices) is counted. The child also reports its
RSS after imports and loading the C kernels, before opening the model: the interpreter's, NumPy's
and the code's share, which the bound does not cover and the report shows beside it. The bound
is the fast engine's: the reference decodes every matrix's words into RAM by design.
Memory-mapped weight pages that were touched count as resident, which is why the file size is
part of the bound.

Run as `python -m weightfile.bench.peak_rss MODEL --engine fast --threads 2 --tokens 8`; it
prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
from dataclasses import dataclass

from weightfile.backends import ENGINES, backend_named
from weightfile.fast.backend import FAST
from weightfile.ref.backend import Backend
from weightfile.ref.qwen3.config import Qwen3Config

#: "A small multiple of the largest layer's activations."
ACTIVATION_MULTIPLE = 4
F32 = 4


@dataclass(frozen=True)
class RssBound:
    """The issue's bound and its three terms, in bytes."""

    file_bytes: int
    kv_cache_bytes: int
    activation_bytes: int  # ACTIVATION_MULTIPLE × the largest activation of one layer call

    @property
    def total(self) -> int:
        return self.file_bytes + self.kv_cache_bytes + self.activation_bytes


def rss_bound(file_bytes: int, c: Qwen3Config, positions: int, prefill: int) -> RssBound:
    """KV: float32 K and V of every layer and position; activations: [prefill, widest] float32.

    The widest per-token activation is the logits row (vocab), or gate and up together (2·ff),
    or q, k and v together, whichever is largest.
    """
    kv = c.num_hidden_layers * positions * 2 * c.kv_dim * F32
    widest = max(c.vocab_size, 2 * c.intermediate_size, c.q_dim + 2 * c.kv_dim, c.hidden_size)
    return RssBound(file_bytes, kv, ACTIVATION_MULTIPLE * prefill * widest * F32)


def status_bytes(field: str) -> int | None:
    """A `kB` field of /proc/self/status (VmRSS, VmHWM) in bytes; None off Linux."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def peak_bytes() -> int:
    """VmHWM, else getrusage's maximum RSS (kilobytes on Linux, bytes on macOS)."""
    hwm = status_bytes("VmHWM")
    if hwm is not None:
        return hwm
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def child(path: str, backend: Backend, threads: int, tokens: int) -> dict[str, int | str]:
    """Open, prefill `tokens`, decode `tokens`; the RSS before opening and the peak after.

    An encrypted model's passphrase comes from VLLM_VQF_KEY, which `measure_peak_rss` sets in
    the child's environment (never on its command line, where other users could read it).
    """
    from weightfile.fast._native import library
    from weightfile.ref.vqf.read import open_vqf

    from . import engines
    from .measure import time_forward, token_ids

    library()  # code, not model data: load the kernels and the engines before the baseline
    engines.preload()
    if path.endswith(".ninfer"):  # a Qwen3.5 file (weightfile/bench/ninfer.py)
        return ninfer_child(path, backend, threads, tokens)
    baseline = status_bytes("VmRSS") or peak_bytes()
    with open_vqf(path, passphrase=os.environb.get(b"VLLM_VQF_KEY") or None) as vqf:
        model = engines.open_fast(vqf, threads) if backend is FAST else engines.open_ref(vqf)
        if model is None:
            raise SystemExit("the fast engine is not available in this tree")
        vocab = model.config.vocab_size
        time_forward(model, token_ids(vocab, tokens), token_ids(vocab, tokens, seed=7))
    return {"engine": backend.name, "baseline_rss_bytes": baseline, "peak_rss_bytes": peak_bytes()}


def ninfer_child(path: str, backend: Backend, threads: int, tokens: int) -> dict[str, int | str]:
    """`child` on a `.ninfer` file: the fast (or reference) Qwen3.5 model."""
    from weightfile.fast.qwen35 import open_model
    from weightfile.ref.ninfer3.read import open_artifact
    from weightfile.ref.qwen35 import Qwen35Model, bind_ninfer

    from .measure import time_forward, token_ids

    baseline = status_bytes("VmRSS") or peak_bytes()
    with open_artifact(path) as nf:
        fast = backend is FAST
        model = open_model(nf, threads=threads) if fast else Qwen35Model(*bind_ninfer(nf))
        vocab = model.config.vocab_size
        time_forward(model, token_ids(vocab, tokens), token_ids(vocab, tokens, seed=7))
    return {"engine": backend.name, "baseline_rss_bytes": baseline, "peak_rss_bytes": peak_bytes()}


def measure_peak_rss(
    path: str | os.PathLike[str],
    engine: str,
    threads: int,
    tokens: int,
    passphrase: bytes | None = None,
) -> dict[str, int | str]:
    """Run `child` in a fresh interpreter and return what it printed."""
    cmd = [sys.executable, "-m", "weightfile.bench.peak_rss", os.fspath(path),
           "--engine", engine, "--threads", str(threads), "--tokens", str(tokens)]  # fmt: skip
    env = dict(os.environb)
    env.pop(b"VLLM_VQF_KEY", None)
    if passphrase is not None:
        env[b"VLLM_VQF_KEY"] = passphrase
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"peak-RSS child failed ({done.returncode}): {done.stderr.strip()}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m weightfile.bench.peak_rss")
    p.add_argument("model")
    p.add_argument("--engine", choices=ENGINES, default="fast")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--tokens", type=int, default=8)
    a = p.parse_args(argv)
    print(json.dumps(child(a.model, backend_named(a.engine), a.threads, a.tokens)))


if __name__ == "__main__":
    main()
