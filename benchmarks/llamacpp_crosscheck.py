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
* The F32 twin: every case is also run by llama.cpp on a GGUF holding gguf-py's dequantisation of
  the exported file (`dequantized_twin`: the same values, every tensor F32), so two more numbers
  are printed: llama.cpp on its file vs on the twin (what its own arithmetic does to these
  weights: ggml multiplies a BF16 matrix with bf16-rounded activations and a Q8_0 / Q4_0 one with
  activations quantised to Q8_0 blocks, where `.ninfer` bf16 / q8_g32_fp16 products keep them
  binary32), and ours vs llama.cpp on the twin (both binary32 on identical weights).
* Judged (Qwen3.5 rows, spec/ninfer3.md §qwen35-gguf): the twin agrees with ours within
  `SAME_VALUES_TOL` of the largest logit with the same greedy tokens, and ours is no further from
  llama.cpp on its file than llama.cpp on its file is from itself on the twin, plus that
  tolerance; the exit status is 1 when a Qwen3.5 row fails. Greedy runs stop at the end-of-text
  id on both sides (`weightfile run` stops there), so a run that ends early is not a mismatch.
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


def dequantized_twin(src: Path, dst: Path) -> Path:
    """`dst`: `src` with every tensor stored F32 (gguf-py's dequantisation: the same values), the
    metadata copied."""
    import gguf

    reader = gguf.GGUFReader(str(src))
    writer = gguf.GGUFWriter(str(dst), reader.fields["general.architecture"].contents())
    for f in reader.fields.values():
        if f.name != "general.architecture" and not f.name.startswith("GGUF."):
            kind = f.types[0]
            sub = f.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
            writer.add_key_value(f.name, f.contents(), kind, sub_type=sub)
    values = {}
    for t in reader.tensors:
        v = gguf.quants.dequantize(np.asarray(t.data), t.tensor_type).astype(np.float32)
        values[t.name] = v
        writer.add_tensor_info(t.name, v.shape, v.dtype, v.nbytes, gguf.GGMLQuantizationType.F32)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for t in reader.tensors:
        writer.write_tensor_data(values[t.name])
    writer.close()
    return dst


def theirs(
    L: types.ModuleType, gguf: Path, prompt: list[int], steps: int, f32_cache: bool = False
) -> tuple[np.ndarray, list[int]]:
    """(last prompt position logits, greedy tokens) from libllama; the tokens stop before an
    end-of-generation id, as `weightfile run` does. `f32_cache`: K and V kept in binary32 and
    flash attention off (llama.cpp's defaults are binary16 K/V and flash attention on CPU)."""
    L.llama_backend_init()
    mp = L.llama_model_default_params()
    mp.n_gpu_layers = 0
    model = L.llama_model_load_from_file(str(gguf).encode(), mp)
    if not model:
        raise SystemExit(f"llama.cpp could not load {gguf}")
    cp = L.llama_context_default_params()
    cp.n_ctx, cp.n_batch, cp.n_threads, cp.n_threads_batch = 256, 256, 1, 1
    if f32_cache:
        cp.type_k = cp.type_v = L.GGML_TYPE_F32
        cp.flash_attn_type = L.LLAMA_FLASH_ATTN_TYPE_DISABLED
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
        if L.llama_vocab_is_eog(vocab, t):
            break
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
    """The numbers printed for one pair of runs (module docstring): `tokens_agree` counts the
    greedy tokens before the first difference; two runs that stop together agree to `steps`."""
    agree = next((i for i, (x, y) in enumerate(zip(ta, tb, strict=False)) if x != y),
                 min(len(ta), len(tb)))  # fmt: skip
    diff = float(np.max(np.abs(a - b)))
    return {
        "max_abs": diff, "max_rel": diff / float(np.max(np.abs(b))),
        "argmax_agrees": bool(np.argmax(a) == np.argmax(b)),
        "tokens_agree": steps if ta == tb else agree, "tokens": steps, "ours": ta,
        "llama.cpp": tb, "logit_range": float(np.max(np.abs(b))),
    }  # fmt: skip


#: Ours vs llama.cpp on the F32 twin (both binary32, identical weights), as a fraction of the
#: largest logit. Measured ≤ 2.1e-4 on the Qwen3.5 cases, seeds 0-2 (see
#: spec/ninfer3.md §qwen35-gguf); llama.cpp keeps K and V in binary16 by default (relative
#: rounding up to 2^-11, about 5e-4, per element), so 1e-3.
SAME_VALUES_TOL = 1e-3


def judge(file: dict, twin: dict, own: dict) -> dict:
    """The verdict of one Qwen3.5 case (module docstring): `file` ours vs llama.cpp on its file,
    `twin` ours vs llama.cpp on the F32 twin, `own` llama.cpp's twin vs its file. The file's
    tolerance is llama.cpp's own difference plus the twin's, both scaled by the file's largest
    logit, so by the triangle inequality the logits pass whenever the twin's do: the file row
    states how far llama.cpp's arithmetic moves these weights; the tokens are checked apart."""
    tol = own["max_rel"] + SAME_VALUES_TOL * twin["logit_range"] / own["logit_range"]
    same_values = twin["max_rel"] <= SAME_VALUES_TOL and twin["tokens_agree"] == twin["tokens"]
    as_close = file["max_rel"] <= tol and file["tokens_agree"] >= own["tokens_agree"]
    return {"tolerance": tol, "same_values": same_values, "as_close": as_close,
            "ok": same_values and as_close}  # fmt: skip


def case_results(L: types.ModuleType, ours_file: Path, gguf: Path, prompt: list[int],
                 steps: int, work: Path) -> dict:  # fmt: skip
    """One case: ours vs llama.cpp on the exported file, and the F32 twin's two comparisons."""
    a, ta = ours(ours_file, prompt, steps, work)
    b, tb = theirs(L, gguf, prompt, steps)
    c, tc = theirs(
        L, dequantized_twin(gguf, gguf.with_name(gguf.stem + "-f32.gguf")), prompt, steps
    )
    out = compare(a, ta, b, tb, steps)
    out["twin"] = compare(a, ta, c, tc, steps)
    out["own"] = compare(c, tc, b, tb, steps)  # scaled by the file's logits, as `out`
    return out


def qwen35_results(L: types.ModuleType, work: Path, prompt: list[int], args: Any) -> dict:
    """The Qwen3.5 cases' numbers and verdicts (module docstring)."""
    out = {}
    for label, moe, fmt in QWEN35_CASES:
        nf, gguf = qwen35_files(work, label, moe, fmt, args.seed)
        r = case_results(L, nf, gguf, prompt, args.steps, work)
        out[label] = r | judge(r, r["twin"], r["own"])
    return out


def report(results: dict) -> None:
    """The table (module docstring): relative differences in % of the largest logit."""
    print("| model, format | ours ~ llama.cpp (file) | llama.cpp file ~ F32 twin | "
          "ours ~ llama.cpp (F32 twin) | tolerance (file) | argmax | verdict |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---|---|")
    for label, r in results.items():
        cells = [f"{x['max_rel']:.3%}, {x['tokens_agree']}/{x['tokens']}"
                 for x in (r, r["own"], r["twin"])]  # fmt: skip
        verdict = ("ok" if r["ok"] else "FAIL") if "ok" in r else "not judged"
        tol = f"{r['tolerance']:.3%}" if "tolerance" in r else ""
        print(f"| {label} | {' | '.join(cells)} | {tol} | "
              f"{'same' if r['argmax_agrees'] else 'differs'} | {verdict} |")  # fmt: skip


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
            results[label] = case_results(L, vqf, gguf, prompt, args.steps, work)
        if not args.no_qwen35:
            results |= qwen35_results(L, work, [t % 300 for t in prompt], args)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"prompt: {prompt}; model: {SIZES}; MoE: {MOE}")
    print("each cell: max |Δ logit| ÷ max |logit| at the prompt's last position, greedy tokens "
          "equal before the first difference")  # fmt: skip
    report(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0 if all(r.get("ok", True) for r in results.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
