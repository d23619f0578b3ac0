"""The same weights in llama.cpp and in weightfile: greedy tokens and last-position logits
(issue 20 item 6). Not a test: llama.cpp is not bit-exact with us; the point is that a VQF ->
GGUF export is the same model.

`python benchmarks/llamacpp_crosscheck.py [--llama-dir DIR]`; the default DIR is where
`benchmarks/vs_llamacpp.py --build` builds: llama-build/build/bin in the cache folder
($WEIGHTFILE_CACHE, else $XDG_CACHE_HOME/weightfile, else ~/.cache/weightfile).

* A seeded tiny transformers Qwen3 and Qwen3-MoE (random weights, untied lm_head) are saved,
  imported with `weightfile convert --wmode q8|q4` (tiled, the default), and exported with
  `weightfile convert m.vqf m.gguf` (the tiles undone, the Q8_0/Q4_0 blocks copied). Without a
  tokenizer the GGUF names llama.cpp's `none` tokenizer model, so both sides take token ids.
* Ours: `weightfile run --engine fast --token-ids ... --save-logits` (greedy; the arrays of
  spec/numerics.md §board-prompts, the prompt's last-position logits and each decode step's).
* llama.cpp: libllama (`--llama-dir` holds libllama.so) through the ctypes bindings of the
  llama_cpp_python source tree that built it (`--bindings`, default the sdist beside the build),
  loaded without the package's high-level layer: the prompt in one batch, then one token per
  decode call, greedy argmax of the float logits, CPU only, one thread.
* Printed per weight mode: max |Δ| and max |Δ| ÷ max |logit| of the prompt's last-position
  logits, whether the argmax agrees, and how many of the greedy tokens agree (the first
  disagreement ends the comparison: later tokens see different contexts).
* Qwen3.5 (`qwen35`, `qwen35moe`, spec/ninfer3.md §qwen35-gguf): a seeded checkpoint with the
  official layer pattern at tiny widths (tests/strategies/qwen35_official.py: 4 layers, one
  full-attention, 2 key / 4 value GDN heads, an MTP block) is imported to `.ninfer` (`--format
  bf16` and `q8_g32_fp16`; dense and MoE) and exported with `weightfile convert m.ninfer m.gguf`
  (llama.cpp's converter transforms applied, the BF16 / Q8_0 blocks copied), so llama.cpp and
  `weightfile run` read the same weights. Its MTP drafts are not compared here.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.demo import cache_root

#: The folder `benchmarks/vs_llamacpp.py --build` builds in (its default_build_dir) and the
#: sdist it unpacks there.
BUILD_FOLDER = "llama-build"
SDIST_FOLDER = "llama_cpp_python-0.3.36"
SIZES = dict(vocab_size=512, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, head_dim=64)  # fmt: skip


#: Qwen3-MoE: the same attention geometry, 4 experts of 64, top 2 (renormalised, as VQF v3)
MOE = dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=64, norm_topk_prob=True,
           decoder_sparse_step=1, mlp_only_layers=[])  # fmt: skip


def default_llama_dir() -> Path:
    """llama.cpp's build/bin in the cache folder (`weightfile.demo.cache_root`)."""
    return cache_root() / BUILD_FOLDER / "build" / "bin"


def default_bindings() -> Path:
    """The llama_cpp_python source tree unpacked beside that build."""
    return cache_root() / BUILD_FOLDER / SDIST_FOLDER


def tiny_model(folder: Path, seed: int, moe: bool = False) -> Path:
    """A seeded random transformers Qwen3 (or Qwen3-MoE), weights scaled up so its logits are
    not flat."""
    import torch
    import transformers

    torch.manual_seed(seed)
    common = dict(
        **SIZES, rms_norm_eps=1e-6, tie_word_embeddings=False, bos_token_id=1, eos_token_id=2,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        max_position_embeddings=512,
    )  # fmt: skip
    if moe:
        cfg = transformers.Qwen3MoeConfig(**common, **MOE)
        model = transformers.Qwen3MoeForCausalLM(cfg)
    else:
        model = transformers.Qwen3ForCausalLM(transformers.Qwen3Config(**common))
    with torch.no_grad():
        for p in model.parameters():
            if p.ndim == 2:
                p.normal_(0.0, 0.08)
    model.save_pretrained(folder)
    return folder


def weightfile(*argv: str) -> None:
    subprocess.run([sys.executable, "-m", "weightfile.cli", *argv], check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip


def ours(vqf: Path, prompt: list[int], steps: int, work: Path) -> tuple[np.ndarray, list[int]]:
    """(last prompt position logits, greedy tokens) from `weightfile run --engine fast`."""
    out = work / f"{vqf.parent.name}-{vqf.stem}.npz"
    weightfile("run", str(vqf), "--engine", "fast", "--token-ids", ",".join(map(str, prompt)),
               "--max-tokens", str(steps), "--save-logits", str(out))  # fmt: skip
    arrays = np.load(out)
    logits = np.asarray(arrays["prefill.logits"], np.float32)
    width = int(arrays["decode.step0.logits"].size) if "decode.step0.logits" in arrays else None
    last = logits.reshape(-1, width or SIZES["vocab_size"])[-1]
    return last, [int(t) for t in arrays["decode.tokens"]]


def bindings(llama_dir: Path, source: Path) -> types.ModuleType:
    """llama_cpp.llama_cpp (the ctypes layer only) over `llama_dir`/libllama.so."""
    os.environ["LLAMA_CPP_LIB_PATH"] = str(llama_dir)
    pkg = types.ModuleType("llama_cpp")  # skip the package __init__ (its high-level deps)
    pkg.__path__ = [str(source / "llama_cpp")]
    sys.modules["llama_cpp"] = pkg
    from llama_cpp import llama_cpp

    return llama_cpp


def theirs(
    L: types.ModuleType, gguf: Path, prompt: list[int], steps: int
) -> tuple[np.ndarray, list[int]]:
    """(last prompt position logits, greedy tokens) from libllama."""
    L.llama_backend_init()
    mp = L.llama_model_default_params()
    mp.n_gpu_layers = 0
    model = L.llama_model_load_from_file(str(gguf).encode(), mp)
    if not model:
        raise SystemExit(f"llama.cpp could not load {gguf}")
    cp = L.llama_context_default_params()
    cp.n_ctx, cp.n_batch, cp.n_threads, cp.n_threads_batch = 256, 256, 1, 1
    ctx = L.llama_init_from_model(model, cp)
    vocab = L.llama_model_get_vocab(model)
    n_vocab = L.llama_vocab_n_tokens(vocab)

    def decode(ids: list[int]) -> np.ndarray:
        arr = (L.llama_token * len(ids))(*ids)
        if L.llama_decode(ctx, L.llama_batch_get_one(arr, len(ids))) != 0:
            raise SystemExit("llama_decode failed")
        ptr = L.llama_get_logits_ith(ctx, -1)
        return np.ctypeslib.as_array(ptr, shape=(n_vocab,)).copy()

    last = decode(prompt)
    tokens, logits = [], last
    for _ in range(steps):
        t = int(np.argmax(logits))
        tokens.append(t)
        logits = decode([t])
    L.llama_free(ctx)
    L.llama_model_free(model)
    return last, tokens


#: Qwen3.5 cases: (label, MoE, .ninfer format)
QWEN35_CASES = (
    ("qwen35 bf16", False, "bf16"),
    ("qwen35 q8", False, "q8_g32_fp16"),
    ("qwen35moe bf16", True, "bf16"),
    ("qwen35moe q8", True, "q8_g32_fp16"),
)


def qwen35_files(work: Path, label: str, moe: bool, fmt: str, seed: int) -> tuple[Path, Path]:
    """(the .ninfer file, its GGUF export) of one Qwen3.5 case."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from strategies.qwen35_official import write_official

    folder = work / label.replace(" ", "-")
    folder.mkdir()
    write_official(folder, layers=4, depth=0, moe=moe, fused=moe, seed=seed)
    nf, gguf = folder / "m.ninfer", folder / "m.gguf"
    weightfile("convert", str(folder), str(nf), "--format", fmt, "--quiet")
    weightfile("convert", str(nf), str(gguf), "--quiet")
    return nf, gguf


def compare(a: np.ndarray, ta: list[int], b: np.ndarray, tb: list[int], steps: int) -> dict:
    """The numbers printed for one case (module docstring)."""
    agree = next((i for i, (x, y) in enumerate(zip(ta, tb, strict=False)) if x != y),
                 min(len(ta), len(tb)))  # fmt: skip
    diff = float(np.max(np.abs(a - b)))
    return {
        "max_abs": diff, "max_rel": diff / float(np.max(np.abs(b))),
        "argmax_agrees": bool(np.argmax(a) == np.argmax(b)),
        "tokens_agree": agree, "tokens": steps, "ours": ta, "llama.cpp": tb,
        "logit_range": float(np.max(np.abs(b))),
    }  # fmt: skip


def qwen35_results(L: types.ModuleType, work: Path, prompt: list[int], args: Any) -> dict:
    """The Qwen3.5 cases' numbers (module docstring)."""
    out = {}
    for label, moe, fmt in QWEN35_CASES:
        nf, gguf = qwen35_files(work, label, moe, fmt, args.seed)
        a, ta = ours(nf, prompt, args.steps, work)
        b, tb = theirs(L, gguf, prompt, args.steps)
        out[label] = compare(a, ta, b, tb, args.steps)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llama-dir", type=Path, default=None,
                    help="holds libllama.so (default: llama-build/build/bin in the cache "
                         "folder, where benchmarks/vs_llamacpp.py --build builds)")  # fmt: skip
    ap.add_argument("--bindings", type=Path, default=None,
                    help="llama_cpp_python source tree matching the build (default: the sdist "
                         "unpacked beside the default build)")  # fmt: skip
    ap.add_argument("--steps", type=int, default=16, help="greedy tokens to compare")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, help="write the numbers here too")
    ap.add_argument("--no-qwen35", action="store_true", help="only the Qwen3 / Qwen3-MoE cases")
    args = ap.parse_args(argv)
    args.llama_dir = args.llama_dir or default_llama_dir()
    args.bindings = args.bindings or default_bindings()
    if not (args.llama_dir / "libllama.so").exists():
        print(f"no libllama.so in {args.llama_dir}: build llama.cpp (benchmarks/vs_llamacpp.py "
              "--build) and pass --llama-dir")  # fmt: skip
        return 0
    L = bindings(args.llama_dir, args.bindings)
    rng = np.random.default_rng(args.seed)
    prompt = [int(t) for t in rng.integers(3, SIZES["vocab_size"], size=12)]
    results = {}
    work = Path(tempfile.mkdtemp(prefix="wf-llamacpp-"))
    try:
        dense, moe = tiny_model(work / "hf", args.seed), tiny_model(work / "moe", args.seed, True)
        for label, hf, wmode in (
            ("qwen3 q8", dense, "q8"),
            ("qwen3 q4", dense, "q4"),
            ("qwen3moe q8", moe, "q8"),
            ("qwen3moe q4", moe, "q4"),
        ):
            tag = label.replace(" ", "-")
            vqf, gguf = work / f"{tag}.vqf", work / f"{tag}.gguf"
            weightfile("convert", str(hf), str(vqf), "--wmode", wmode, "--quiet")
            weightfile("convert", str(vqf), str(gguf), "--quiet")
            a, ta = ours(vqf, prompt, args.steps, work)
            b, tb = theirs(L, gguf, prompt, args.steps)
            results[label] = compare(a, ta, b, tb, args.steps)
        if not args.no_qwen35:
            results |= qwen35_results(L, work, [t % 300 for t in prompt], args)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"prompt: {prompt}; model: {SIZES}; MoE: {MOE}")
    print("| model, wmode | max abs Δ logits | max abs Δ ÷ max abs logit | argmax | "
          "greedy tokens agree |")  # fmt: skip
    print("|---|---:|---:|---|---:|")
    for wmode, r in results.items():
        print(f"| {wmode} | {r['max_abs']:.3g} | {r['max_rel']:.3g} | "
              f"{'same' if r['argmax_agrees'] else 'differs'} | "
              f"{r['tokens_agree']}/{r['tokens']} |")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
