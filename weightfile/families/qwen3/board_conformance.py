"""Board-profile model cases (`vqf-board-model`): a tiny Q4_0 / Q8_0 tiled Qwen3 VQF, a prompt
and a prompt path -> greedy tokens, logits and per-op digests under the `kestrel-board`
numerics profile (spec/numerics.md §board; README "Board model cases").

The expected answer is the reference board profile (`ref/qwen3/board`), which reproduces the
board engine's own outputs bit for bit (tests/ref/qwen3/board). The geometry differs from the
canonical model cases' because the board needs head_dim a multiple of 32 (spec/numerics.md
§board-forward). The `fast` adapter answers with the fast board engine (fast/qwen3/board).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.conformance.case_types import Case, read_case
from weightfile.conformance.seeded import uniform
from weightfile.families.qwen3.conformance import digest
from weightfile.families.qwen3.hf import config_from_hf
from weightfile.families.qwen3.hf_names import (
    EMBED,
    FINAL_NORM,
    LAYER_TENSORS,
    LM_HEAD,
    layer_tensor,
)
from weightfile.families.qwen3.to_vqf import arch_from_config, build_tensors
from weightfile.fast.backend import FAST
from weightfile.ref.backend import REFERENCE, Backend
from weightfile.ref.qwen3.board.model import bind_board, generate
from weightfile.ref.vqf.encode import file_flags
from weightfile.ref.vqf.read import open_vqf
from weightfile.ref.vqf.write import write_vqf
from weightfile.spec.vqf.qtypes import QType

#: The tiny Qwen3 of the board cases (a transformers-style config, untied lm_head).
BOARD_HF: dict[str, Any] = dict(
    vocab_size=64, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
    num_attention_heads=2, num_key_value_heads=1, head_dim=32, rope_theta=1000000.0,
    rms_norm_eps=1e-6, bos_token_id=0, eos_token_id=1, tie_word_embeddings=False,
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class BoardCase:
    name: str
    meaning: str
    qtype: QType
    seed: int
    prompt: tuple[int, ...]
    path: str  # "prefill" | "tokenwise" (spec/numerics.md §board-prompts)
    new_tokens: int


CASES = (
    BoardCase("q4-prefill", "Q4_0 4x4, batched prefill of 5 tokens (4 GEMM + 1 decode-form)",
              QType.Q4_0, 21, (0, 17, 42, 9, 33), "prefill", 4),
    BoardCase("q4-tokenwise", "Q4_0 4x4, each prompt token through the decode step",
              QType.Q4_0, 21, (0, 17, 42, 9, 33), "tokenwise", 4),
    BoardCase("q8-prefill", "Q8_0 8x8, batched prefill of 6 tokens (f16 activation scales)",
              QType.Q8_0, 22, (0, 5, 63, 12, 40, 7), "prefill", 4),
    BoardCase("q8-tokenwise", "Q8_0 8x8, each prompt token through the decode step",
              QType.Q8_0, 22, (0, 5, 63, 12, 40, 7), "tokenwise", 4),
)  # fmt: skip


def state_dict(seed: int) -> dict[str, np.ndarray]:
    """Seeded weights in transformers names: norms 1 ± 0.15, projections ±0.3, embedding and
    lm_head ±1."""
    c = config_from_hf(BOARD_HF)
    d, ffn, q, kv = c.hidden_size, c.intermediate_size, c.q_dim, c.kv_dim
    shapes = {"attn_norm": (d,), "ffn_norm": (d,), "q_norm": (c.head_dim,),
              "k_norm": (c.head_dim,), "q_proj": (q, d), "k_proj": (kv, d), "v_proj": (kv, d),
              "o_proj": (d, q), "gate_proj": (ffn, d), "up_proj": (ffn, d),
              "down_proj": (d, ffn)}  # fmt: skip
    base = seed * 1000
    sd = {EMBED: uniform(base, (c.vocab_size, d)), LM_HEAD: uniform(base + 1, (c.vocab_size, d))}
    sd[FINAL_NORM] = uniform(base + 2, d, 0.15) + np.float32(1.0)
    for i in range(c.num_hidden_layers):
        for j, f in enumerate(LAYER_TENSORS):
            at = base + 3 + i * len(LAYER_TENSORS) + j
            if f.endswith("norm"):
                sd[layer_tensor(i, f)] = uniform(at, shapes[f], 0.15) + np.float32(1.0)
            else:
                sd[layer_tensor(i, f)] = uniform(at, shapes[f], 0.3)
    return sd


def write_model(path: Path, case: BoardCase) -> Path:
    c = config_from_hf(BOARD_HF)
    flags = file_flags(case.qtype, "tiled")
    tensors = build_tensors(state_dict(case.seed), c, case.qtype, flags)
    return write_vqf(path, arch=arch_from_config(BOARD_HF, c), tensors=tensors, flags=flags)


def answer(folder: Path, case: dict[str, Any], backend: Backend = REFERENCE) -> dict[str, Any]:
    """The protocol's answer: greedy tokens, every logits row (the prompt path's rows, then one
    per decode step) and the SHA-256 of every per-op intermediate (spec/numerics.md §board-prompts).
    FAST binds the C board engine (the corpus itself is generated with REFERENCE)."""
    prompt, steps = [int(t) for t in case["prompt"]], int(case["new_tokens"])
    with open_vqf(folder / case["model"]) as vqf:
        if backend is FAST:
            from weightfile.fast.qwen3.board.model import bind_board_fast

            model = bind_board_fast(vqf)
        else:
            model = bind_board(vqf)
    arrays = generate(model, prompt, steps, case["prompt_path"], ops=True)
    tag = "decode" if case["prompt_path"] == "prefill" else "decode_path"
    first = "prefill.logits" if tag == "decode" else "prompt.decode_path.logits"
    rows = [np.atleast_2d(arrays[first])] + [arrays[f"{tag}.step{k}.logits"] for k in range(steps)]
    every = np.vstack(rows).astype(np.float32)
    ops = sorted(n for n in arrays if not n.endswith((".logits", ".tokens")))
    return {
        "tokens": [str(t) for t in arrays[f"{tag}.tokens"].tolist()],
        "logits": {
            "dtype": "float32",
            "shape": [str(n) for n in every.shape],
            "hex": np.ascontiguousarray(every, dtype="<f4").tobytes().hex(),
        },
        "activations": {name: digest(arrays[name]) for name in ops},
    }


def case_answer(backend: Backend, folder: Path) -> dict[str, Any]:
    """The built-in adapter's answer to a `vqf-board-model` case folder: `answer` on its
    case.json, with the board engine of `backend` (spec/numerics.md §board; the row's builder
    names it)."""
    return answer(folder, read_case(folder), backend)


def corpus_cases(scratch: Path, prefix: str) -> Iterator[Case]:
    """(case id, case.json fields, files, want.json) of every board model case."""
    for case in CASES:
        path = write_model(scratch / f"{case.name}.vqf", case)
        fields = {"expect": "accept", "model": "model.vqf",
                  "prompt": [str(t) for t in case.prompt], "new_tokens": str(case.new_tokens),
                  "numerics": "kestrel-board", "prompt_path": case.path,
                  "description": case.meaning}  # fmt: skip
        want = answer(scratch, {**fields, "model": path.name})
        files = {"model.vqf": path.read_bytes()}
        yield f"{prefix}/board-model/qwen3/{case.name}", fields, files, want
