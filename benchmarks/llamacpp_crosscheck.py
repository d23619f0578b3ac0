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
  `weightfile run` read the same weights.
* Qwen3.5 MTP drafts (spec/ninfer3.md §qwen35-gguf-mtp): for each of `--mtp-prompts` seeded
  prompts and K = `--draft-tokens` greedy drafts after the prompt's first target token, ours
  (the fast target's final-norm hidden states and `fast.qwen35.mtp`, the first round of `run
  --spec mtp`) against llama.cpp's MTP context (`LLAMA_CONTEXT_TYPE_MTP` on the same model
  loaded with `load_mtp`, driven through `llama_batch_ext` / `llama_process` and the staging
  functions `llama_set_embeddings_nextn` / `llama_get_embeddings_nextn[_ith]`, called by their
  C++ symbol names). Three comparisons: "own" (each side its own target hidden states, our
  alignment), "same h" (llama.cpp's MTP fed our hidden states: the MTP block alone) and
  "driver" (llama.cpp's own alignment, common/speculative.cpp: an extra first entry of token
  x_0 with a zero hidden state, positions one later; ours computed the same way). Each
  comparison runs on llama.cpp's file, on its F32 twin (below, MTP block and nextn keys
  included), and on the twin with K/V in binary32 and flash attention off.
* The F32 twin: every case is also run by llama.cpp on a GGUF holding gguf-py's dequantisation of
  the exported file (`dequantized_twin`: the same values, every tensor F32), so two more numbers
  are printed: llama.cpp on its file vs on the twin (what its own arithmetic does to these
  weights: ggml multiplies a BF16 matrix with bf16-rounded activations and a Q8_0 / Q4_0 one with
  activations quantised to Q8_0 blocks, where `.ninfer` bf16 / q8_g32_fp16 products keep them
  binary32), and ours vs llama.cpp on the twin (both binary32 on identical weights). llama.cpp
  still keeps K and V in binary16 there unless `--twin-f32-kv` (binary32 K/V, flash attention
  off, on the target rows' twin runs; the MTP rows run the twin both ways).
* Judged (Qwen3.5 rows, spec/ninfer3.md §qwen35-gguf): the twin agrees with ours within
  `SAME_VALUES_TOL` of the largest logit with the same greedy tokens, and ours is no further from
  llama.cpp on its file than llama.cpp on its file is from itself on the twin, plus that
  tolerance. The MTP drafts of a file are judged on the twin with binary32 K/V (with llama.cpp's
  binary16 K/V the draft logits move up to ~0.2% and a near-tied draft can flip): in all three
  comparisons every prompt's first target token and K drafts equal ours, the draft logits
  within `SAME_VALUES_TOL` (`mtp_judge`). The exit status is 1 when a Qwen3.5 row fails. Greedy runs
  stop at the end-of-text id on both sides (`weightfile run` stops there), so a run that ends
  early is not a mismatch.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
import types
from pathlib import Path
from typing import Any, ClassVar

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
    metadata copied: all tensors and keys, so the MTP block `blk.{n_layer}` and the
    `nextn_predict_layers` key stay."""
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
                 steps: int, work: Path, twin_f32_kv: bool = False) -> dict:  # fmt: skip
    """One case: ours vs llama.cpp on the exported file, and the F32 twin's two comparisons
    (`twin_f32_kv`: the twin run with `theirs`'s `f32_cache`)."""
    a, ta = ours(ours_file, prompt, steps, work)
    b, tb = theirs(L, gguf, prompt, steps)
    twin = dequantized_twin(gguf, gguf.with_name(gguf.stem + "-f32.gguf"))
    c, tc = theirs(L, twin, prompt, steps, twin_f32_kv)
    out = compare(a, ta, b, tb, steps)
    out["twin"] = compare(a, ta, c, tc, steps)
    out["own"] = compare(c, tc, b, tb, steps)  # scaled by the file's logits, as `out`
    return out


def qwen35_results(L: types.ModuleType, work: Path, prompt: list[int], args: Any) -> dict:
    """The Qwen3.5 cases' numbers and verdicts (module docstring)."""
    out = {}
    for label, moe, fmt in QWEN35_CASES:
        nf, gguf = qwen35_files(work, label, moe, fmt, args.seed)
        r = case_results(L, nf, gguf, prompt, args.steps, work, args.twin_f32_kv)
        out[label] = r | judge(r, r["twin"], r["own"])
    return out


class MtpLib:
    """The staging functions (src/llama-ext.h) libllama exports under C++ names only."""

    NAMES: ClassVar[dict] = {
        "set_nextn": ("_Z26llama_set_embeddings_nextnP13llama_contextbb", [ctypes.c_bool] * 2),
        "nextn": ("_Z26llama_get_embeddings_nextnP13llama_context", []),
        "nextn_ith": ("_Z30llama_get_embeddings_nextn_ithP13llama_contexti", [ctypes.c_int32]),
    }

    def __init__(self, llama_dir: Path) -> None:
        lib = ctypes.CDLL(str(llama_dir / "libllama.so"))
        for attr, (symbol, args) in self.NAMES.items():
            fn = getattr(lib, symbol)
            fn.argtypes = [ctypes.c_void_p, *args]
            fn.restype = None if attr == "set_nextn" else ctypes.POINTER(ctypes.c_float)
            setattr(self, attr, fn)


class TheirMtp:
    """llama.cpp's target context (final-norm hidden states of every entry) and MTP context
    (its own KV cache) on one model loaded with its MTP block."""

    def __init__(self, L: types.ModuleType, X: MtpLib, gguf: Path, f32_cache: bool) -> None:
        self.L, self.X, self.f32_cache = L, X, f32_cache
        L.llama_backend_init()
        mp = L.llama_model_default_params()
        mp.n_gpu_layers, mp.load_mtp = 0, True
        self.model = L.llama_model_load_from_file(str(gguf).encode(), mp)
        if not self.model or L.llama_model_n_layer_nextn(self.model) != 1:
            raise SystemExit(f"llama.cpp could not load {gguf} with its MTP block")
        self.H = L.llama_model_n_embd_out(self.model)
        self.V = L.llama_vocab_n_tokens(L.llama_model_get_vocab(self.model))

    def context(self, mtp: bool):
        cp = self.L.llama_context_default_params()
        cp.n_ctx, cp.n_batch, cp.n_threads, cp.n_threads_batch = 256, 256, 1, 1
        cp.ctx_type = 1 if mtp else 0  # LLAMA_CONTEXT_TYPE_MTP
        if self.f32_cache:  # as `theirs`
            cp.type_k = cp.type_v = self.L.GGML_TYPE_F32
            cp.flash_attn_type = self.L.LLAMA_FLASH_ATTN_TYPE_DISABLED
        ctx = self.L.llama_init_from_model(self.model, cp)
        if not ctx:
            raise SystemExit("llama.cpp could not create the context")
        self.X.set_nextn(ctx, True, mtp)  # the MTP context: rows of output entries only
        return ctx

    def target(self, prompt: list[int]) -> tuple[np.ndarray, int]:
        """(hidden states after the final norm [n, H], the first greedy token)."""
        L, ctx = self.L, self.context(False)
        arr = (L.llama_token * len(prompt))(*prompt)
        if L.llama_decode(ctx, L.llama_batch_get_one(arr, len(prompt))) != 0:
            raise SystemExit("llama_decode failed")
        h = np.ctypeslib.as_array(self.X.nextn(ctx), shape=(len(prompt), self.H)).copy()
        logits = np.ctypeslib.as_array(L.llama_get_logits_ith(ctx, -1), shape=(self.V,))
        first = int(np.argmax(logits))
        L.llama_free(ctx)
        return h, first

    def run(self, ctx, batch, entries: list[tuple[int, np.ndarray, int]], out: bool):
        """One llama_process of (token, hidden row, position) entries; with `out`, the last
        entry's (draft logits [V], MTP hidden state [H])."""
        L, keep = self.L, []
        L.llama_batch_ext_clear(batch)
        for i, (tok, row, pos) in enumerate(entries):
            row = np.ascontiguousarray(row, dtype=np.float32)
            p = (ctypes.c_int32 * 4)(pos, 0, 0, 0)
            keep += [row, p]
            idx = L.llama_batch_ext_add_token(batch, 0, tok)
            data = row.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
            ok = idx == i and L.llama_batch_ext_set_pos(batch, idx, p)
            if not (
                ok and L.llama_batch_ext_set_embd_token(batch, idx, L.llama_embd(data, 1, self.H))
            ):
                raise SystemExit("llama_batch_ext refused an entry")
            if out and i == len(entries) - 1:
                L.llama_batch_ext_set_output_logits(batch, idx, True)
        if L.llama_process(ctx, 1, batch) != 0:  # LLAMA_PROCESS_TYPE_DECODE
            raise SystemExit("llama_process failed on the MTP context")
        if not out:
            return None
        n = len(entries) - 1
        logits = np.ctypeslib.as_array(L.llama_get_logits_ith(ctx, n), shape=(self.V,)).copy()
        return logits, np.ctypeslib.as_array(self.X.nextn_ith(ctx, n), shape=(self.H,)).copy()

    def drafts(self, stem: list[tuple[int, np.ndarray, int]], k: int) -> tuple[list, np.ndarray]:
        """K greedy drafts: the stem's entries but the last in one batch without outputs, the
        last alone (as llama.cpp's driver: after a batch of several entries its MTP context
        hands back the first entry's hidden row), then each draft with the previous MTP hidden
        state at the next position."""
        ctx = self.context(True)
        batch = self.L.llama_batch_ext_init(ctx)
        if len(stem) > 1:
            self.run(ctx, batch, stem[:-1], False)
        logits, d = self.run(ctx, batch, stem[-1:], True)
        tokens, rows, pos = [int(np.argmax(logits))], [logits], stem[-1][2]
        for j in range(1, k):
            logits, d = self.run(ctx, batch, [(tokens[-1], d, pos + j)], True)
            tokens.append(int(np.argmax(logits)))
            rows.append(logits)
        self.L.llama_batch_ext_free(batch)
        self.L.llama_free(ctx)
        return tokens, np.stack(rows)

    def close(self) -> None:
        self.L.llama_model_free(self.model)


def our_mtp(nf_path: Path, prompts: list[list[int]], k: int) -> list[dict]:
    """Per prompt: our final-norm hidden states, first token, and K drafts (with their logits)
    in our alignment and in llama.cpp's driver alignment (module docstring)."""
    from weightfile.families import ninfer_family
    from weightfile.fast.qwen35.mtp import FastVerifier, open_mtp
    from weightfile.ref.ninfer3.read import open_artifact

    out = []
    with open_artifact(nf_path) as nf:
        model = ninfer_family(nf).fast_model(nf, threads=1)
        verifier, head = FastVerifier(model), open_mtp(nf, model, False)
        for prompt in prompts:
            h, logits = verifier.run(prompt, verifier.new_cache(), False)
            first = int(np.argmax(logits[-1]))
            zero = np.zeros((1, h.shape[1]), np.float32)
            own = our_drafts(head, [*prompt[1:], first], h, k)
            driver = our_drafts(head, [*prompt, first], np.concatenate([zero, h]), k)
            out.append({"h": h, "first": first, "own": own, "driver": driver})
    return out


def our_drafts(
    head: Any, tokens: list[int], hiddens: np.ndarray, k: int
) -> tuple[list, np.ndarray]:
    """K greedy drafts from MTP entries (tokens, hiddens) at positions 0, 1, ..."""
    cache = head.new_cache()
    d, logits = head.extend(tokens, hiddens, cache)
    drafts, rows = [head.draft_token(logits[0])], [logits[0]]
    for _ in range(1, k):
        d, logits = head.extend([drafts[-1]], d, cache)
        drafts.append(head.draft_token(logits[0]))
        rows.append(logits[0])
    return drafts, np.stack(rows)


def mtp_compare(ours_: tuple[list, np.ndarray], theirs_: tuple[list, np.ndarray]) -> dict:
    """How many of the K drafts agree (in order) and max |Δ| ÷ max |logit| of the draft logits
    up to the first disagreement (later rows see different drafts)."""
    (ta, la), (tb, lb) = ours_, theirs_
    agree = next((i for i, (x, y) in enumerate(zip(ta, tb, strict=True)) if x != y), len(ta))
    rows = min(agree + 1, len(ta))
    a, b = la[:rows, : lb.shape[1]], lb[:rows, : la.shape[1]]
    rel = float(np.max(np.abs(a - b))) / float(np.max(np.abs(b)))
    return {"agree": agree, "k": len(ta), "ours": ta, "llama.cpp": tb, "max_rel": rel}


def mtp_case(
    L: types.ModuleType, X: MtpLib, mine: list[dict], gguf: Path, prompts, k: int, f32_cache=False
) -> dict:
    """One file's MTP comparisons over the prompts (module docstring): `mine` is `our_mtp`'s
    answer for them; `f32_cache` as `theirs`."""
    them = TheirMtp(L, X, gguf, f32_cache)
    rows: dict[str, list] = {"own": [], "same h": [], "driver": [], "first": []}
    try:
        for prompt, o in zip(prompts, mine, strict=True):
            h, first = them.target(prompt)
            rows["first"].append(first == o["first"])
            same = [(t, o["h"][i], i) for i, t in enumerate([*prompt[1:], o["first"]])]
            rows["same h"].append(mtp_compare(o["own"], them.drafts(same, k)))
            if first != o["first"]:  # own and driver drafts follow different tokens
                continue
            own = [(t, h[i], i) for i, t in enumerate([*prompt[1:], first])]
            rows["own"].append(mtp_compare(o["own"], them.drafts(own, k)))
            zero = np.zeros(them.H, np.float32)
            drv = [(t, zero if i == 0 else h[i - 1], i) for i, t in enumerate([*prompt, first])]
            rows["driver"].append(mtp_compare(o["driver"], them.drafts(drv, k)))
    finally:
        them.close()
    return rows


def mtp_results(L: types.ModuleType, work: Path, args: Any) -> dict:
    """The MTP rows of every Qwen3.5 case (module docstring)."""
    X = MtpLib(args.llama_dir)
    rng = np.random.default_rng(args.seed + 1)
    prompts = [[int(t) for t in rng.integers(3, 300, size=n)] for n in (5, 8, 12, 17)]
    prompts = prompts[: args.mtp_prompts]
    out = {}
    for label, moe, fmt in QWEN35_CASES:
        nf, gguf = qwen35_files(work, "mtp " + label, moe, fmt, args.seed)
        twin = dequantized_twin(gguf, gguf.with_name(gguf.stem + "-f32.gguf"))
        mine = our_mtp(nf, prompts, args.draft_tokens)
        res = {
            side: mtp_case(L, X, mine, file, prompts, args.draft_tokens, f32_kv)
            for side, file, f32_kv in mtp_sides(gguf, twin)
        }
        out[label] = res | {"ok": mtp_judge(res["twin f32 kv"])}
    return out


def mtp_sides(gguf: Path, twin: Path) -> tuple:
    """(name, GGUF, K/V in binary32 and flash attention off) of llama.cpp's three MTP runs."""
    return (("file", gguf, False), ("twin", twin, False), ("twin f32 kv", twin, True))


MTP_KINDS = ("own", "same h", "driver")


def mtp_judge(twin: dict) -> bool:
    """The verdict of one file's MTP drafts (module docstring): on the F32 twin run with K/V in
    binary32 every prompt's first target token and K drafts equal ours in the three comparisons,
    and the draft logits within `SAME_VALUES_TOL` of the largest, as the twin's target logits."""
    rows = [r for kind in MTP_KINDS for r in twin[kind]]
    return (
        all(twin["first"])
        and all(len(twin[kind]) == len(twin["first"]) for kind in MTP_KINDS)
        and all(r["agree"] == r["k"] and r["max_rel"] <= SAME_VALUES_TOL for r in rows)
    )


def mtp_cell(rows: dict, kind: str) -> str:
    """Prompts with all K drafts equal (those with another first target token left out), and
    the worst draft-logit max |Δ| ÷ max |logit|."""
    r, skipped = rows[kind], len(rows["same h"]) - len(rows[kind])
    equal = sum(x["agree"] == x["k"] for x in r)
    note = f" ({skipped} with another first token left out)" if skipped else ""
    worst = max((x["max_rel"] for x in r), default=float("nan"))
    return f"{equal}/{len(r)}{note}, {100 * worst:.2g}%"


def print_mtp(results: dict) -> None:
    """One table row per case and comparison: on llama.cpp's file, on the F32 twin, and on the
    twin with K/V in binary32, drafts equal over the prompts and the worst logits; the verdict
    judges the last (mtp_judge)."""
    print("each MTP cell: prompts with all K drafts equal, worst draft-logit max |Δ| ÷ max |logit|")
    print("| MTP case | comparison | llama.cpp file | F32 twin | F32 twin, F32 K/V | verdict |")
    print("|---|---|---:|---:|---:|---|")
    for label, res in results.items():
        verdict = "ok" if res["ok"] else "FAIL"
        for kind in MTP_KINDS:
            cells = [mtp_cell(res[side], kind) for side in ("file", "twin", "twin f32 kv")]
            print(f"| {label} | {kind} | {' | '.join(cells)} | {verdict} |")


def target_results(L: types.ModuleType, work: Path, prompt: list[int], args: Any) -> dict:
    """The target-logit cases: Qwen3 / Qwen3-MoE VQF exports, then Qwen3.5 (module docstring)."""
    results = {}
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
        results[label] = case_results(L, vqf, gguf, prompt, args.steps, work, args.twin_f32_kv)
    if not args.no_qwen35:
        results |= qwen35_results(L, work, [t % 300 for t in prompt], args)
    return results


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
    ap.add_argument("--draft-tokens", type=int, default=3, help="MTP drafts per prompt (K)")
    ap.add_argument("--mtp-prompts", type=int, default=4, help="MTP prompts (at most 4)")
    ap.add_argument("--mtp-only", action="store_true", help="only the Qwen3.5 MTP drafts")
    ap.add_argument("--twin-f32-kv", action="store_true",
                    help="llama.cpp on the target rows' F32 twins: K/V binary32, flash "
                         "attention off (default: binary16 K/V, flash attention on)")  # fmt: skip
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
    results, mtp = {}, {}
    work = Path(tempfile.mkdtemp(prefix="wf-llamacpp-"))
    try:
        if not args.mtp_only:
            results = target_results(L, work, prompt, args)
        if not args.no_qwen35:
            mtp = mtp_results(L, work, args)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if results:
        print(f"prompt: {prompt}; model: {SIZES}; MoE: {MOE}")
        print("each cell: max |Δ logit| ÷ max |logit| at the prompt's last position, greedy "
              "tokens equal before the first difference")  # fmt: skip
        report(results)
    if mtp:
        print_mtp(mtp)
        results["mtp"] = mtp
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    judged = [*results.values(), *mtp.values()]
    return 0 if all(r.get("ok", True) for r in judged) else 1


if __name__ == "__main__":
    raise SystemExit(main())
