"""Peak RSS of `weightfile convert` against the largest tensor it converts (issue 20 item 1).

Not a test: `python benchmarks/bench_convert_rss.py [--geometry qwen3-0.6b] [--work DIR]`.

A synthetic Hugging Face checkpoint (config.json + one model.safetensors of seeded random bf16
weights, tied embedding; the Qwen3-0.6B geometry by default, ~1.2 GB) is written to a temporary
folder, then each conversion runs in a child process whose peak resident set is read with
`os.wait4` (the kernel's ru_maxrss of that child alone):

* hf -> vqf --wmode q4 and --wmode q8 (tiled, the default layout),
* vqf (q8) -> gguf, and that gguf -> vqf --wmode q8 (blocks copied).

The checkpoint is written by a child too, and this parent never imports NumPy or torch: a
forked child's ru_maxrss starts from its parent's resident set. A child that imports the same
modules and converts nothing gives the baseline (Python, NumPy, the C kernels, gguf-py). The
table states peak, peak - baseline, and that excess as a multiple of the largest tensor (the
bf16 embedding as stored, and as float32). The folder is deleted after.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GEOMETRIES = {
    "qwen3-0.6b": dict(vocab=151_936, hidden=1024, intermediate=3072, layers=28, heads=16,
                       kv_heads=8, head_dim=128),
    "tiny": dict(vocab=4096, hidden=256, intermediate=768, layers=2, heads=4, kv_heads=2,
                 head_dim=64),
}  # fmt: skip

BASELINE = (
    "import weightfile.cli, weightfile.commands.convert, weightfile.convert.dispatch, "
    "weightfile.families.qwen3.to_vqf, weightfile.families.qwen3.from_gguf, "
    "weightfile.convert.vqf_gguf, "
    "weightfile.fast.codecs.vqf, gguf, safetensors, ml_dtypes\n"
    "from weightfile.fast.vqf.fnv1a64 import fnv1a64; fnv1a64(b'x')\n"
    "import weightfile.fast.codecs.vqf as c; c.codec('q8_0'); c.codec('q4_0')"
)


def tensor_shapes(g: dict[str, int]) -> dict[str, tuple[int, ...]]:
    """transformers names -> shapes of a dense Qwen3 with a tied embedding."""
    d, q, kv, ff = (
        g["hidden"],
        g["heads"] * g["head_dim"],
        g["kv_heads"] * g["head_dim"],
        g["intermediate"],
    )
    out: dict[str, tuple[int, ...]] = {
        "model.embed_tokens.weight": (g["vocab"], d),
        "model.norm.weight": (d,),
    }
    for i in range(g["layers"]):
        p = f"model.layers.{i}."
        out |= {
            p + "input_layernorm.weight": (d,),
            p + "post_attention_layernorm.weight": (d,),
            p + "self_attn.q_norm.weight": (g["head_dim"],),
            p + "self_attn.k_norm.weight": (g["head_dim"],),
            p + "self_attn.q_proj.weight": (q, d),
            p + "self_attn.k_proj.weight": (kv, d),
            p + "self_attn.v_proj.weight": (kv, d),
            p + "self_attn.o_proj.weight": (d, q),
            p + "mlp.gate_proj.weight": (ff, d),
            p + "mlp.up_proj.weight": (ff, d),
            p + "mlp.down_proj.weight": (d, ff),
        }
    return out


def write_checkpoint(folder: Path, g: dict[str, int], seed: int = 0) -> dict[str, int]:
    """config.json + model.safetensors (bf16); returns name -> stored bytes."""
    import torch
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    gen = torch.Generator().manual_seed(seed)
    tensors = {}
    for name, shape in tensor_shapes(g).items():
        if len(shape) == 1:
            t = 1.0 + 0.1 * torch.randn(shape, generator=gen)
        else:
            t = 0.02 * torch.randn(shape, generator=gen)
        tensors[name] = t.to(torch.bfloat16)
    save_file(tensors, str(folder / "model.safetensors"))
    config = {
        "model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"],
        "vocab_size": g["vocab"], "hidden_size": g["hidden"],
        "intermediate_size": g["intermediate"], "num_hidden_layers": g["layers"],
        "num_attention_heads": g["heads"], "num_key_value_heads": g["kv_heads"],
        "head_dim": g["head_dim"], "rope_theta": 1e6, "rms_norm_eps": 1e-6,
        "max_position_embeddings": 8192, "tie_word_embeddings": True,
        "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "bfloat16",
    }  # fmt: skip
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return {n: t.numel() * 2 for n, t in tensors.items()}


def peak_rss(argv: list[str]) -> tuple[int, float]:
    """(peak RSS in bytes, wall seconds) of one child process run to completion."""
    t0 = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed with exit code {child.returncode}")
    return usage.ru_maxrss * 1024, time.perf_counter() - t0  # Linux: ru_maxrss in KiB


def convert_argv(src: Path, dst: Path, *options: str) -> list[str]:
    return [sys.executable, "-m", "weightfile.cli", "convert", str(src), str(dst), "--quiet",
            *options]  # fmt: skip


def machine() -> str:
    """The machine line, from a child (importing weightfile here would grow this process)."""
    code = "from weightfile.bench.machine import describe_machine; print(describe_machine())"
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True
    ).stdout.strip()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--geometry", choices=GEOMETRIES, default="qwen3-0.6b")
    ap.add_argument("--work", type=Path, default=None, help="scratch folder (default: a tmp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    ap.add_argument("--write-checkpoint", type=Path, help=argparse.SUPPRESS)  # the child's job
    args = ap.parse_args(argv)
    if args.write_checkpoint is not None:
        sizes = write_checkpoint(args.write_checkpoint, GEOMETRIES[args.geometry])
        (args.write_checkpoint / "sizes.json").write_text(json.dumps(sizes), encoding="utf-8")
        return 0
    work = Path(tempfile.mkdtemp(prefix="wf-rss-", dir=args.work))
    try:
        hf = work / "hf"
        peak_rss([sys.executable, __file__, "--geometry", args.geometry, "--write-checkpoint",
                  str(hf)])  # fmt: skip
        sizes = json.loads((hf / "sizes.json").read_text(encoding="utf-8"))
        largest_name = max(sizes, key=sizes.__getitem__)
        largest = sizes[largest_name]
        total = (hf / "model.safetensors").stat().st_size
        base, _ = peak_rss([sys.executable, "-c", BASELINE])
        runs = [
            ("hf -> vqf q4", convert_argv(hf, work / "q4.vqf", "--wmode", "q4")),
            ("hf -> vqf q8", convert_argv(hf, work / "q8.vqf", "--wmode", "q8")),
            ("vqf q8 -> gguf", convert_argv(work / "q8.vqf", work / "q8.gguf")),
            ("gguf -> vqf q8", convert_argv(work / "q8.gguf", work / "back.vqf", "--wmode", "q8")),
        ]
        print(f"machine: {machine()}")
        print(f"checkpoint: {args.geometry}, {total / 1e9:.2f} GB bf16; largest tensor "
              f"{largest_name} {largest / 1e6:.0f} MB bf16 ({2 * largest / 1e6:.0f} MB as "
              f"float32); baseline (imports only) {base / 1e6:.0f} MB")  # fmt: skip
        print("| conversion | peak RSS MB | peak - baseline MB | ÷ largest (bf16) | "
              "÷ largest (f32) | wall s |")  # fmt: skip
        print("|---|---:|---:|---:|---:|---:|")
        for label, cmd in runs:
            peak, wall = peak_rss(cmd)
            excess = peak - base
            print(f"| {label} | {peak / 1e6:.0f} | {excess / 1e6:.0f} | {excess / largest:.2f} | "
                  f"{excess / (2 * largest):.2f} | {wall:.1f} |", flush=True)  # fmt: skip
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
