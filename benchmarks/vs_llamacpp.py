"""weightfile against llama.cpp's `llama-bench`, on the same geometry and the same bytes a token.

Not a test: run `python benchmarks/vs_llamacpp.py --llama-bench PATH` (or `--build` to build
llama-bench from the llama_cpp_python 0.3.36 source distribution with CMake, -DGGML_NATIVE=ON;
without either the script looks for `llama-bench` on PATH and otherwise says how to get it and
stops, exit 0). Issue 19 item 5:

* llama.cpp's model is written here with gguf-py (GGUFWriter), independent of any converter:
  the Qwen3-0.6B geometry of `weightfile bench --synthetic qwen3-0.6b-<q>` (weightfile/bench/
  synthetic.py), every matrix in one type as llama-quantize --pure writes it (Q4_0 or Q8_0;
  norms F32), untied output, random blocks (finite f16 scales), the qwen3 metadata the loader
  needs and a minimal tokenizer (`tokenizer.ggml.model = none` with `qwen3.vocab_size`: llama.cpp
  then has vocab_size placeholder tokens; llama-bench feeds random ids and never tokenizes).
  Bytes read per decoded token are printed for both files: they differ only in one embedding row
  (our F16 row, their Q4_0/Q8_0 row).
* Rounds interleave the two (the order alternates per round); a round counts only when a
  contention probe before and after it shows two concurrent single-thread spin loops each taking
  <= 1.15x the time of one alone (both vCPUs free, `--probe-limit`) and, because other jobs
  saturating the machine slow the lone loop as much as the pair, each loop of the pair ran at
  least 1/1.15 of its wall time (wall ÷ cpu time <= 1.15).
* Both sides run llama-bench's tests (ppN: an N-token prompt in one call; tgN: N tokens one call
  each, from an empty cache), `-r` repetitions each, mean t/s; the ratio is weightfile ÷ llama.cpp.
  `--depths 0,256,1024` passes `-d` to both: each test then also runs after an untimed prefill of
  that many tokens (`tg64 @ d256`); results are keyed by (test, depth, threads).
  Per-round ratios and the medians over the quiet rounds are printed (markdown), `--json FILE`
  keeps every number.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.bench.machine import describe_machine
from weightfile.bench.synthetic import SyntheticSpec, spec_named, synthetic_model
from weightfile.bench.synthetic_spec import MoeSyntheticSpec
from weightfile.demo import cache_root

SDIST = "llama_cpp_python==0.3.36"
QUANTS = ("q4_0", "q8_0")
PROBE_LIMIT = 1.15


# -- llama.cpp's model, written with gguf-py --------------------------------------------------
def random_blocks(qtype: str, rows: int, cols: int, rng: np.random.Generator) -> np.ndarray:
    """uint8 [rows, cols/32 · block bytes] of Q4_0 (f16 d, 16 nibble bytes) or Q8_0 (f16 d, 32
    int8) blocks: random codes, f16 scales of a 0.02-std weight (finite: no NaN slows or breaks a
    kernel)."""
    blocks = rows * cols // 32
    codes = 16 if qtype == "q4_0" else 32
    typical = 0.06 / (8 if qtype == "q4_0" else 127)  # ~3 std over the code range
    d = (rng.uniform(0.5, 1.5, blocks) * typical).astype(np.float16).view(np.uint8)
    qs = rng.integers(0, 256, (blocks, codes), dtype=np.uint8)
    return np.concatenate([d.reshape(blocks, 2), qs], axis=1).reshape(rows, -1)


def gguf_tensors(s: SyntheticSpec) -> list[tuple[str, tuple[int, int] | int, bool]]:
    """(name, [out, in] or norm length, quantized) in llama.cpp's qwen3 names (src/models/qwen3)."""
    q_dim, kv_dim = s.heads * s.head_dim, s.kv_heads * s.head_dim
    out: list[tuple[str, tuple[int, int] | int, bool]] = [
        ("token_embd.weight", (s.vocab, s.hidden), True),
        ("output_norm.weight", s.hidden, False),
        ("output.weight", (s.vocab, s.hidden), True),
    ]
    for i in range(s.layers):
        b = f"blk.{i}."
        out += [
            (b + "attn_norm.weight", s.hidden, False),
            (b + "attn_q.weight", (q_dim, s.hidden), True),
            (b + "attn_k.weight", (kv_dim, s.hidden), True),
            (b + "attn_v.weight", (kv_dim, s.hidden), True),
            (b + "attn_q_norm.weight", s.head_dim, False),
            (b + "attn_k_norm.weight", s.head_dim, False),
            (b + "attn_output.weight", (s.hidden, q_dim), True),
            (b + "ffn_norm.weight", s.hidden, False),
            (b + "ffn_gate.weight", (s.intermediate, s.hidden), True),
            (b + "ffn_up.weight", (s.intermediate, s.hidden), True),
            (b + "ffn_down.weight", (s.hidden, s.intermediate), True),
        ]
    return out


def gguf_tensors_moe(s: MoeSyntheticSpec) -> list[tuple[str, tuple[int, ...] | int, bool]]:
    """llama.cpp's qwen3moe names (src/models/qwen3moe, as weightfile's VQF → GGUF exporter
    writes them, spec/vqf.md §converter): attention as qwen3's, per layer the F32 router
    `ffn_gate_inp` [E, d] and the experts stacked as `ffn_{gate,up}_exps` [E, Ie, d] and
    `ffn_down_exps` [E, d, Ie] (numpy order: the GGUF ne is reversed)."""
    out = [t for t in gguf_tensors(s) if not t[0].split(".")[-2].startswith("ffn_")]
    for i in range(s.layers):
        b = f"blk.{i}."
        out += [
            (b + "ffn_norm.weight", s.hidden, False),
            (b + "ffn_gate_inp.weight", (s.experts, s.hidden), False),
            (b + "ffn_gate_exps.weight", (s.experts, s.moe_ffn, s.hidden), True),
            (b + "ffn_up_exps.weight", (s.experts, s.moe_ffn, s.hidden), True),
            (b + "ffn_down_exps.weight", (s.experts, s.hidden, s.moe_ffn), True),
        ]
    return out


def write_gguf(s: SyntheticSpec, qtype: str, path: Path, seed: int = 19) -> Path:
    """The all-`qtype` GGUF of `s`'s geometry (written once; reused when present)."""
    import gguf

    if path.is_file():
        return path
    rng = np.random.default_rng(seed)
    gtype = {"q4_0": gguf.GGMLQuantizationType.Q4_0, "q8_0": gguf.GGMLQuantizationType.Q8_0}
    ftype = {"q4_0": gguf.LlamaFileType.MOSTLY_Q4_0, "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0}
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_suffix(".part")
    moe = isinstance(s, MoeSyntheticSpec)
    w = gguf.GGUFWriter(part, "qwen3moe" if moe else "qwen3")
    w.add_name(f"synthetic {s.name} ({qtype}, random weights)")
    w.add_context_length(s.max_seq_len)
    w.add_embedding_length(s.hidden)
    w.add_feed_forward_length(s.moe_ffn if moe else s.intermediate)
    if moe:
        w.add_expert_count(s.experts)
        w.add_expert_used_count(s.top_k)
        w.add_expert_feed_forward_length(s.moe_ffn)
    w.add_block_count(s.layers)
    w.add_head_count(s.heads)
    w.add_head_count_kv(s.kv_heads)
    w.add_key_length(s.head_dim)
    w.add_value_length(s.head_dim)
    w.add_rope_freq_base(s.rope_theta)
    w.add_layer_norm_rms_eps(s.norm_eps)
    w.add_file_type(ftype[qtype])
    w.add_tokenizer_model("none")  # no vocabulary: vocab_size placeholder tokens
    w.add_vocab_size(s.vocab)
    for name, shape, quantized in gguf_tensors_moe(s) if moe else gguf_tensors(s):
        if quantized:
            *lead, rows, cols = shape  # type: ignore[misc]
            data = random_blocks(qtype, int(np.prod(lead, dtype=np.int64)) * rows, cols, rng)
            data = data.reshape(*lead, rows, -1)
            w.add_tensor(name, data, raw_shape=data.shape, raw_dtype=gtype[qtype])
        elif isinstance(shape, tuple):  # the router: random logits spread the routing
            w.add_tensor(name, rng.standard_normal(shape).astype(np.float32) * 0.02)
        else:
            w.add_tensor(name, np.ones(shape, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    part.rename(path)
    return path


def gguf_bytes_per_token(path: Path, used: int = 0, experts: int = 1) -> int:
    """What llama.cpp reads to decode one token: every tensor but the embedding, plus one
    embedding row; of stacked experts (`*_exps`) only `used` of `experts` (k distinct ones)."""
    import gguf

    total = 0
    for t in gguf.GGUFReader(path).tensors:
        if t.name == "token_embd.weight":
            total += int(t.n_bytes) // int(t.shape[1])  # ne = [hidden, vocab]: one row of vocab
        elif t.name.endswith("_exps.weight"):
            total += int(t.n_bytes) * used // experts
        else:
            total += int(t.n_bytes)
    return total


def vqf_bytes_per_token(path: Path) -> int:
    """The same count on our file: shared tensors plus k distinct experts per layer on an MoE."""
    from weightfile.bench.moe_bytes import expert_bytes, shared_bytes
    from weightfile.bench.roofline import weight_bytes_per_token
    from weightfile.ref.vqf.read import open_vqf

    with open_vqf(path) as vqf:
        arch = vqf.header.arch
        if not int(arch.get("n_experts", 0) or 0):  # a dense file
            return weight_bytes_per_token(vqf)
        return shared_bytes(vqf) + expert_bytes(vqf) * int(arch["top_k"]) * int(arch["n_layers"])


# -- llama-bench: given, found, or built --------------------------------------------------------
def download_sdist(sdist: Path, index: str = "https://pypi.org/simple/llama-cpp-python/") -> None:
    """The sdist from the package index's simple page, checked against the sha256 the index
    lists. (`pip download --no-binary :all:` would first build every build dependency from
    source to read the metadata: many minutes for a file it then only unpacks.)"""
    page = urllib.request.urlopen(index, timeout=60).read().decode()
    found = re.search(rf'href="([^"#]*/{re.escape(sdist.name)})#sha256=([0-9a-f]{{64}})"', page)
    if found is None:
        raise SystemExit(f"skipped: {sdist.name} is not on {index}")
    url, sha256 = found.groups()
    data = urllib.request.urlopen(url, timeout=600).read()
    if hashlib.sha256(data).hexdigest() != sha256:
        raise SystemExit(f"{url}: sha256 differs from the index's {sha256}")
    partial = sdist.with_suffix(".part")
    partial.write_bytes(data)
    partial.replace(sdist)


def no_amx_flags() -> list[str]:
    """On x86-64, CMake flags that keep AMX out of a -march=native build. A VM can report AMX in
    its CPU flags and grant the tile permission yet fault on the tiles: llama-bench from the
    native build died with SIGILL at `tileloadd` on an Intel Xeon KVM guest (2026-12-02). Our
    kernels use no AMX either, so both sides then run their AVX-512/VNNI code."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return []
    off = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
    return [f"-DCMAKE_C_FLAGS={off}", f"-DCMAKE_CXX_FLAGS={off}"]


def default_build_dir() -> Path:
    """Where --build downloads and builds unless --build-dir says otherwise: the user's cache
    folder, as every other weightfile cache ($WEIGHTFILE_CACHE, else
    $XDG_CACHE_HOME/weightfile, else ~/.cache/weightfile; `weightfile.demo.cache_root`)."""
    return cache_root() / "llama-build"


def build_llama_bench(folder: Path, jobs: int) -> Path:
    """Download the sdist, CMake-configure its vendored llama.cpp (-DGGML_NATIVE=ON, no AMX: see
    no_amx_flags), build only the llama-bench target; reused when already built."""
    binary = folder / "build" / "bin" / "llama-bench"
    if binary.is_file():
        return binary
    for tool in ("cmake", "c++"):
        if shutil.which(tool) is None:
            raise SystemExit(f"skipped: --build needs {tool} on PATH")
    folder.mkdir(parents=True, exist_ok=True)
    name = SDIST.replace("==", "-")
    sdist = folder / f"{name}.tar.gz"
    if not sdist.is_file():
        download_sdist(sdist)
    source = folder / name / "vendor" / "llama.cpp"
    if not source.is_dir():
        with tarfile.open(sdist) as tar:
            tar.extractall(folder, filter="data")
    subprocess.run(["cmake", "-S", str(source), "-B", str(folder / "build"),
                    "-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=ON", "-DLLAMA_CURL=OFF",
                    "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
                    "-DLLAMA_BUILD_SERVER=OFF", *no_amx_flags()], check=True)  # fmt: skip
    subprocess.run(["cmake", "--build", str(folder / "build"), "-j", str(jobs),
                    "--target", "llama-bench"], check=True)  # fmt: skip
    return binary


def find_llama_bench(args: argparse.Namespace) -> Path | None:
    if args.llama_bench is not None:
        return Path(args.llama_bench)
    if args.build:
        folder = Path(args.build_dir) if args.build_dir else default_build_dir()
        return build_llama_bench(folder, os.cpu_count() or 1)
    found = shutil.which("llama-bench")
    return Path(found) if found else None


# -- the contention probe -----------------------------------------------------------------------
SPIN = """
import sys, time
start_at, n = float(sys.argv[1]), int(sys.argv[2])
while time.time() < start_at:
    pass
t, c = time.perf_counter(), time.process_time()
x = 0
for i in range(n):
    x += i
print(time.perf_counter() - t, time.process_time() - c)
"""


def spin(copies: int, n: int) -> list[tuple[float, float]]:
    """(wall, cpu) seconds of `copies` concurrent single-thread spin loops started together."""
    start_at = time.time() + 0.3  # after every interpreter has started
    cmd = [sys.executable, "-c", SPIN, repr(start_at), str(n)]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) for _ in range(copies)]
    out = [p.communicate()[0].split() for p in procs]
    return [(float(wall), float(cpu)) for wall, cpu in out]


def probe(n: int = 3_000_000) -> tuple[float, float]:
    """(max of two concurrent loops ÷ one loop alone, worst wall ÷ cpu of the two loops).

    The first is the issue's rule (~1.0 when two cores are free). On a machine saturated by
    other jobs it stays near 1.0 too (every runnable task gets the same small share, alone or
    not), which the second catches: a loop that had a core to itself has wall ≈ cpu time.
    """
    ((alone, _),) = spin(1, n)
    pair = spin(2, n)
    return max(w for w, _ in pair) / alone, max(w / c for w, c in pair)


def is_quiet(probes: list[tuple[float, float]], limit: float) -> bool:
    """Both rules hold in every probe of the round."""
    return all(ratio <= limit and share <= limit for ratio, share in probes)


def exit_reason(code: int) -> str:
    """A child's return code in words: a signal by name (SIGILL with what usually causes it)."""
    if code >= 0:
        return f"exit {code}"
    name = signal.Signals(-code).name if -code in signal.valid_signals() else f"signal {-code}"
    if -code == signal.SIGILL:
        return (f"{name}: an instruction this CPU refused; a build made before --build turned "
                f"AMX off, or for another CPU, needs its build folder removed")  # fmt: skip
    return name


# -- one round ----------------------------------------------------------------------------------
def row_key(r: dict[str, Any]) -> tuple[str, int, int]:
    """(test, depth, threads) of one llama-bench JSON row or one `weightfile bench -o jsonl` row:
    both carry n_prompt, n_gen, n_depth and n_threads."""
    name = f"pp{r['n_prompt']}" if r["n_prompt"] else f"tg{r['n_gen']}"
    return name, int(r.get("n_depth", 0)), int(r["n_threads"])


def key_text(key: tuple[str, int, int], quant: str) -> str:
    """ "tg64/q4_0/2", and at a depth "tg64 @ d256/q4_0/2" (llama-bench's test name)."""
    test, depth, threads = key
    return f"{test}{f' @ d{depth}' if depth else ''}/{quant}/{threads}"


def depth_flags(depths: list[int] | tuple[int, ...]) -> list[str]:
    return ["-d", ",".join(map(str, depths))]  # the same option on both sides


def llama_rows(binary: Path, gguf_path: Path, tests: Tests, threads: list[int], reps: int,
               depths: list[int] | tuple[int, ...] = (0,)):  # fmt: skip
    cmd = [str(binary), "-m", str(gguf_path), "-t", ",".join(map(str, threads)),
           "-r", str(reps), "-o", "json", *tests.llama_flags(), *depth_flags(depths)]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"llama-bench failed ({exit_reason(done.returncode)}): "
                         f"{done.stderr.strip()[-2000:]}")  # fmt: skip
    rows = json.loads(done.stdout)
    return {row_key(r): float(r["avg_ts"]) for r in rows}, rows[0]


def weightfile_rows(synthetic: str, tests: Tests, threads: list[int], reps: int, cache: str | None,
                    depths: list[int] | tuple[int, ...] = (0,)):  # fmt: skip
    cmd = [sys.executable, "-m", "weightfile.cli", "bench", "--synthetic", synthetic,
           "-t", ",".join(map(str, threads)), "-r", str(reps), "-o", "jsonl", "--no-rss",
           "--no-ref", "-q", *tests.weightfile_flags(), *depth_flags(depths)]  # fmt: skip
    if cache is not None:
        cmd += ["--cache-dir", cache]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"weightfile bench failed ({done.returncode}): {done.stderr.strip()}")
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return {row_key(r): float(r["avg_ts"]) for r in rows}, rows[0]


class Tests:
    """The pp and tg lengths of `--tests pp64,pp512,tg64`."""

    def __init__(self, text: str) -> None:
        self.names = [t.strip() for t in text.split(",") if t.strip()]
        bad = [t for t in self.names if t[:2] not in ("pp", "tg") or not t[2:].isdigit()]
        if bad or not self.names:
            raise argparse.ArgumentTypeError(f"tests are ppN or tgN, got {text!r}")
        self.pp = [int(t[2:]) for t in self.names if t.startswith("pp")]
        self.tg = [int(t[2:]) for t in self.names if t.startswith("tg")]

    def llama_flags(self) -> list[str]:
        return ["-p", ",".join(map(str, self.pp or [0])), "-n", ",".join(map(str, self.tg or [0]))]

    def weightfile_flags(self) -> list[str]:
        return self.llama_flags()  # the same option names, on purpose


def parse_depths(text: str, p: argparse.ArgumentParser) -> list[int]:
    """--depths 0,256,1024: integers of at least 0, repeats dropped."""
    try:
        depths = list(dict.fromkeys(int(d) for d in text.split(",") if d.strip()))
    except ValueError:
        p.error(f"--depths takes integers separated by commas (0,256,1024), got {text!r}")
    if not depths or any(d < 0 for d in depths):
        p.error(f"--depths must be at least 0, got {text!r}")
    return depths


def median_table(rounds: list[dict[str, Any]], quiet_only: bool) -> list[str]:
    use = [r for r in rounds if r["quiet"]] if quiet_only else rounds
    lines = ["| test | quant | threads | weightfile t/s | llama.cpp t/s | ratio | rounds |",
             "|---|---|---:|---:|---:|---:|---:|"]  # fmt: skip
    keys = dict.fromkeys(k for r in use for k in r["ratio"])
    for key in keys:
        test, quant, n = key.split("/")  # test: "tg64" or "tg64 @ d256"
        have = [r for r in use if key in r["ratio"]]
        wf = statistics.median(r["weightfile"][key] for r in have)
        lc = statistics.median(r["llama"][key] for r in have)
        ratio = statistics.median(r["ratio"][key] for r in have)
        lines.append(
            f"| {test} | {quant} | {n} | {wf:.1f} | {lc:.1f} | {ratio:.2f} | {len(have)} |"
        )
    return lines


def git_commit() -> str:
    done = subprocess.run(["git", "-C", str(Path(__file__).parent), "rev-parse", "--short=12",
                           "HEAD"], capture_output=True, text=True, check=False)  # fmt: skip
    return done.stdout.strip() or "unknown"


#: --arch qwen35 / qwen35moe (issue 28 item 4): quant -> (our synthetic `.ninfer` preset, the
#: GGUF's matrix type); the MoE preset cut to --layers (an attention layer must be among them).
NINFER_PRESETS = {
    "qwen35": {"q8_0": "qwen35-0.8b-q8_g32_fp16", "bf16": "qwen35-0.8b-bf16"},
    "qwen35moe": {"q8_0": "qwen36-35b-a3b-q8_g32_fp16", "bf16": "qwen36-35b-a3b-bf16"},
}


def ninfer_models(arch: str, quants: list[str], layers: int, a: argparse.Namespace):
    """quant -> (synthetic name, GGUF path) of the `.ninfer` side by side, both files written."""
    from vs_llamacpp_qwen35 import write_gguf as write_qwen35_gguf

    from weightfile.bench.ninfer import per_token
    from weightfile.bench.synthetic import spec_named
    from weightfile.ref.ninfer3.read import open_artifact
    from weightfile.ref.qwen35.bind import bind_config

    gguf_dir = Path(a.gguf_dir) if a.gguf_dir else cache_root() / "gguf"
    models = {}
    every = spec_named(NINFER_PRESETS[arch][quants[0]]).full_attention_interval
    if arch == "qwen35moe" and layers < every:
        # llama.cpp 0c1e570's hybrid cache has no KV buffer then and aborts in
        # llama_kv_cache::set_input_k_idxs (GGML_ASSERT(buffer)): say so instead
        raise SystemExit(f"-L {layers} keeps no full-attention layer (layer i is one when i + 1 "
                         f"is a multiple of {every}): llama.cpp aborts on such a file; use -L "
                         f"{every} or more")  # fmt: skip
    for q in quants:
        name = NINFER_PRESETS[arch][q] + (f"-L{layers}" if arch == "qwen35moe" else "")
        path, _ = synthetic_model(name, a.cache_dir)
        gg = write_qwen35_gguf(spec_named(name), q, gguf_dir / f"{name}.gguf")
        with open_artifact(path) as nf:
            ours = per_token(nf, bind_config(nf))[0]
        models[q] = (name, gg)
        theirs = gguf_bytes_per_token(gg)
        if spec_named(name).tied:  # the output head is token_embd, read whole (bf16 both sides)
            theirs += spec_named(name).vocab * spec_named(name).hidden * 2
        print(
            f"{q}: bytes per decoded token: weightfile {ours / 1e6:.2f} MB ({path.name}), "
            f"llama.cpp {theirs / 1e6:.2f} MB ({gg.name}; its routed experts counted whole)"
        )
    return models


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python benchmarks/vs_llamacpp.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--llama-bench", metavar="PATH", help="a built llama-bench binary")
    p.add_argument(
        "--build",
        action="store_true",
        help=f"build llama-bench from the {SDIST} sdist (reused once built)",
    )
    p.add_argument("--build-dir", default=None,
                   help="where --build downloads and builds (default: llama-build in the cache "
                        "folder, $XDG_CACHE_HOME/weightfile or ~/.cache/weightfile)")  # fmt: skip
    p.add_argument(
        "--arch",
        choices=("qwen3", "qwen3moe", "qwen35", "qwen35moe"),
        default="qwen3",
        help="qwen3: the VQF Qwen3-0.6B geometry (default); qwen3moe: VQF Qwen3-30B-A3B's, first "
        "-L layers; qwen35: the .ninfer Qwen3.5-0.8B geometry; qwen35moe: Qwen3.6-35B-A3B's, "
        "first -L layers",
    )
    p.add_argument(
        "-L",
        "--layers",
        type=int,
        default=4,
        help="layers kept of the MoE models (default 4: a 2.2 GB Q4_0 qwen3moe file)",
    )
    p.add_argument(
        "--quants",
        default=None,
        help="q4_0,q8_0 (qwen3, qwen3moe; the default) or q8_0,bf16 (qwen35, qwen35moe)",
    )
    p.add_argument(
        "--tests",
        type=Tests,
        default=Tests("pp64,pp512,tg64"),
        help="ppN / tgN, comma-separated (default pp64,pp512,tg64)",
    )
    p.add_argument("--threads", default="1,2", help="thread counts (default 1,2)")
    p.add_argument(
        "--depths",
        default="0",
        help="depths passed to both sides as -d: each test after an untimed prefill of that "
        "many tokens, shown as `tg64 @ d256` (default 0; e.g. 0,256,1024)",
    )
    p.add_argument("--rounds", type=int, default=4, help="quiet rounds wanted (default 4)")
    p.add_argument(
        "--max-rounds",
        type=int,
        default=None,
        help="stop after this many rounds, quiet or not (default 3 × --rounds)",
    )
    p.add_argument("--reps", type=int, default=3, help="repetitions per test (default 3)")
    p.add_argument(
        "--probe-limit",
        type=float,
        default=PROBE_LIMIT,
        help="a round is quiet when the probe is at most this (default 1.15)",
    )
    p.add_argument("--gguf-dir", default=None, help="where the GGUF files are written")
    p.add_argument("--cache-dir", default=None, help="weightfile's synthetic cache")
    p.add_argument("--json", metavar="FILE", help="also write every number here")
    a = p.parse_args(argv)
    allowed = QUANTS if a.arch in ("qwen3", "qwen3moe") else ("q8_0", "bf16")
    quants = [q.strip() for q in (a.quants or ",".join(allowed)).split(",") if q.strip()]
    if not quants or any(q not in allowed for q in quants):
        p.error(f"--quants takes {' and/or '.join(allowed)} with --arch {a.arch}, got {a.quants!r}")
    threads = [int(t) for t in a.threads.split(",")]
    if a.rounds < 1 or a.reps < 1 or any(t < 1 for t in threads):
        p.error("--rounds, --reps and --threads must be at least 1")
    depths = parse_depths(a.depths, p)
    if a.llama_bench is not None and not Path(a.llama_bench).is_file():
        p.error(f"--llama-bench: no such file: {a.llama_bench}")
    binary = find_llama_bench(a)
    if binary is None or not binary.is_file():
        print("skipped: no llama-bench (give --llama-bench PATH, or --build to build it from "
              f"the {SDIST} source distribution; needs cmake and a C++ compiler)")  # fmt: skip
        return 0
    gguf_dir = Path(a.gguf_dir) if a.gguf_dir else cache_root() / "gguf"
    models = {}
    vqf_arch = a.arch in ("qwen3", "qwen3moe")
    if not vqf_arch:
        models = ninfer_models(a.arch, quants, a.layers, a)
    for q in quants if vqf_arch else []:
        moe = a.arch == "qwen3moe"
        s = spec_named(f"qwen3-30b-a3b-{q}-L{a.layers}" if moe else f"qwen3-0.6b-{q}")
        vqf, _ = synthetic_model(s.name, a.cache_dir)
        gg = write_gguf(s, q, gguf_dir / f"{s.name}-pure.gguf")
        models[q] = (s.name, gg)
        used = (s.top_k, s.experts) if isinstance(s, MoeSyntheticSpec) else (0, 1)
        print(
            f"{q}: bytes per decoded token: weightfile {vqf_bytes_per_token(vqf) / 1e6:.2f} MB "
            f"({vqf.name}), llama.cpp {gguf_bytes_per_token(gg, *used) / 1e6:.2f} MB ({gg.name})"
        )
    rounds: list[dict[str, Any]] = []
    limit = a.max_rounds or 3 * a.rounds
    info: dict[str, Any] = {}
    while len(rounds) < limit and sum(r["quiet"] for r in rounds) < a.rounds:
        before = probe()
        entry: dict[str, Any] = {"probe": [before], "weightfile": {}, "llama": {}, "ratio": {}}
        for q in quants:
            name, gg = models[q]
            first_llama = len(rounds) % 2 == 0  # alternate who runs first
            order = ("llama", "weightfile") if first_llama else ("weightfile", "llama")
            got = {}
            for who in order:
                if who == "llama":
                    got[who], info["llama"] = llama_rows(
                        binary, gg, a.tests, threads, a.reps, depths
                    )
                else:
                    got[who], info["weightfile"] = weightfile_rows(
                        name, a.tests, threads, a.reps, a.cache_dir, depths
                    )
            for key, lc in got["llama"].items():
                k = key_text(key, q)
                if key in got["weightfile"]:
                    entry["llama"][k], entry["weightfile"][k] = lc, got["weightfile"][key]
                    entry["ratio"][k] = got["weightfile"][key] / lc
        entry["probe"].append(probe())
        entry["quiet"] = is_quiet(entry["probe"], a.probe_limit)
        entry["load_1min"] = os.getloadavg()[0]
        rounds.append(entry)
        ratios = ", ".join(f"{k} {v:.2f}" for k, v in entry["ratio"].items())
        verdict = "quiet" if entry["quiet"] else "NOT quiet (not counted)"
        probes = " then ".join(f"{r:.2f}× pair, wall/cpu {w:.2f}" for r, w in entry["probe"])
        print(f"round {len(rounds)}: probe {probes}, load {entry['load_1min']:.1f}: {verdict}: "
              f"{ratios}", flush=True)  # fmt: skip
    lc = info.get("llama", {})
    print()
    print(f"machine: {describe_machine()} · --arch {a.arch}")
    print(
        f"weightfile {git_commit()} · llama.cpp {lc.get('build_commit')} "
        f"(build {lc.get('build_number')}, {SDIST} sdist) · "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    quiet = sum(r["quiet"] for r in rounds)
    print(f"medians of {quiet} quiet rounds (of {len(rounds)}), mean t/s of {a.reps} repetitions:")
    print("\n".join(median_table(rounds, quiet_only=True) if quiet else ["(no quiet round)"]))
    if quiet < len(rounds):
        print(f"\nmedians of all {len(rounds)} rounds, quiet or not:")
        print("\n".join(median_table(rounds, quiet_only=False)))
    if a.json:
        Path(a.json).write_text(json.dumps({"rounds": rounds, "llama_bench": lc}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
