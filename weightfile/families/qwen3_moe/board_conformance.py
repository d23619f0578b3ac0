"""Board MoE model cases (`vqf-board-moe-model`, vqf v7): a Qwen3-MoE (version-3) VQF with Q8_0
experts, a prompt and a prompt path -> greedy tokens, logits, per-op digests and the experts
chosen at every token, under the `kestrel-board` numerics profile (spec/numerics.md
§board-moe-model; conformance/README.md "Board MoE model cases"); and files the board refuses.

The accepted cases run on the board MoE packs' own model files (tests/data/kestrel-board-v2/moe-*,
written by our importer, the files the engine ran): their answer also holds the Q8 MoE FFN on the
pack's inputs `moe.x_in`, which the generator's cross-check (conformance/crosscheck.py,
`check_board_moe`) compares with the engine's own arrays bit for bit. The `moe-d` file has
identical router rows 0 and 7 in layer 1, so their logits tie exactly at every token and the tie
rule (rank order, the smaller index first; spec/numerics.md §board-moe-topk) decides where one is
chosen and the other not. The prompt path around the FFN is the profile's, assumed from the
engine's source (the packs have no MoE logits; spec/numerics.md §board-moe-model).

The rejected cases are small files written by the importer's own functions (`build_tensors`),
each breaking one limit: `vqf.bind.unsupported` for what the profile does not run (its message
naming the limit and the file's value), and `vqf.bind.moe_band` for an expert width of 48, the
geometry where the engine's Q8 MoE FFN silently returns zeros (spec/numerics.md
§board-moe-defect): a file of it is refused before it runs, and `verify --engine-defaults` names
the defect (`vqf.defect.moe_q8_width`), which the generator checks.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.conformance.case_types import Case, read_case
from weightfile.conformance.sections import published_section
from weightfile.conformance.seeded import uniform
from weightfile.families.qwen3.conformance import digest
from weightfile.families.qwen3.hf import config_from_hf
from weightfile.families.qwen3.hf_names import EMBED, FINAL_NORM, LM_HEAD, layer_tensor
from weightfile.families.qwen3.to_vqf import arch_from_config
from weightfile.families.qwen3_moe.conformance import MOE_HF
from weightfile.families.qwen3_moe.hf_names import ATTENTION_FIELDS, expert_tensor, router_tensor
from weightfile.families.qwen3_moe.to_vqf import build_tensors
from weightfile.fast.backend import FAST
from weightfile.ref.backend import REFERENCE, Backend
from weightfile.ref.qwen3.board.model import generate
from weightfile.ref.qwen3_moe.board.ffn import dump_arrays
from weightfile.ref.qwen3_moe.board.model import bind_board_moe
from weightfile.ref.vqf.encode import file_flags
from weightfile.ref.vqf.read import open_vqf
from weightfile.ref.vqf.write import TensorSource, write_vqf
from weightfile.spec.errors import Violation, WeightfileError
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.qtypes import QType
from weightfile.spec.vqf.rules import RULES

#: The board MoE packs (engine outputs; tests/data/kestrel-board-v2/README.md), in the tree.
PACKS = Path(__file__).resolve().parents[3] / "tests" / "data" / "kestrel-board-v2"
#: The answer's FFN arrays given as hex (the small ones) and as SHA-256 digests.
FFN_HEX = ("moe.router_logits", "moe.experts", "moe.weights", "moe.out")
FFN_DIGESTS = ("moe.gate", "moe.up", "moe.act", "moe.partial_sum")
INPUTS = "x_in.bin"  # the pack's moe.x_in, little-endian float32 [L, N, d]


@dataclass(frozen=True, slots=True)
class PackCase:
    name: str
    meaning: str
    pack: str  # a folder of tests/data/kestrel-board-v2
    prompt: tuple[int, ...]
    path: str  # "prefill" | "tokenwise" (spec/numerics.md §board-prompts)
    new_tokens: int
    tie: tuple[int, int, int] | None = None  # (layer, expert kept, expert dropped) at the k-th slot


CASES = (
    PackCase("q8-tie-prefill", "the moe-d pack's file (d 96, 8 experts of 32, top 3): layer 1's "
             "router rows 0 and 7 are identical, so at every token their logits tie exactly and "
             "the rank order decides (both chosen, 0 first; or at the 3rd slot 0 kept, 7 "
             "dropped); a 9-token batched prefill; the FFN on the pack's 2x16 inputs",
             "moe-d-q8_0-x102", (1, 250, 16, 73, 99, 147, 106, 36, 14), "prefill", 4, (1, 0, 7)),
    PackCase("q8-tokenwise", "the moe-a pack's file (d 64, 8 experts of 32, top 2): a 6-token "
             "prompt, each token through the decode step; the FFN on the pack's 2x8 inputs",
             "moe-a-q8_0-x101", (1, 5, 200, 12, 40, 7), "tokenwise", 4),
)  # fmt: skip


def pack_files(pack: str) -> tuple[bytes, bytes]:
    """(model.vqf bytes, moe.x_in bytes) of a board MoE pack; the file must be the one the engine
    ran (its case.json's SHA-256)."""
    folder = PACKS / pack
    blob = (folder / "model.vqf").read_bytes()
    recipe = json.loads((folder / "case.json").read_text())["recipe"]
    if hashlib.sha256(blob).hexdigest() != recipe["vqf_sha256"]:
        raise RuntimeError(f"{pack}/model.vqf is not the file the engine ran")
    with np.load(folder / "engine.npz") as npz:
        x = np.ascontiguousarray(npz["moe.x_in"], dtype="<f4")
    return blob, x.tobytes()


def hexed(a: np.ndarray) -> dict[str, Any]:
    """An array as the protocol's {"dtype", "shape", "hex"} (float32 or int32, little-endian)."""
    dtype = "int32" if a.dtype == np.int32 else "float32"
    return {
        "dtype": dtype,
        "shape": [str(n) for n in a.shape],
        "hex": np.ascontiguousarray(a, dtype="<" + ("i4" if dtype == "int32" else "f4"))
        .tobytes()
        .hex(),
    }


def bind(backend: Backend, vqf: Any) -> Any:
    """The board MoE model of an open file: REFERENCE's, or FAST's on the C kernels."""
    if backend is FAST:
        from weightfile.fast.qwen3_moe.board.model import bind_board_moe_fast

        return bind_board_moe_fast(vqf)
    return bind_board_moe(vqf)


def chosen_log(model: Any) -> list[list[list[int]]]:
    """Record the experts every call of the model's `moe_step` chooses, per layer, in feeding
    order (an instance attribute shadows the method for this model only)."""
    layers = model.weights.layers
    seen: list[list[list[int]]] = [[] for _ in layers]
    step = model.moe_step

    def recorded(lw: Any, n: np.ndarray) -> Any:
        s = step(lw, n)
        seen[next(i for i, w in enumerate(layers) if w is lw)].append(s.experts.tolist())
        return s

    object.__setattr__(model, "moe_step", recorded)
    return seen


def ffn_answer(model: Any, x: np.ndarray) -> dict[str, Any]:
    """The Q8 MoE FFN of every row (l, t) of x [L, N, d] through layer l (`model.moe_step`, the
    reference's or the C one), under the packs' names (spec/numerics.md §board-moe)."""
    layers = model.weights.layers
    arrays = dump_arrays([[model.moe_step(layers[i], row) for row in x[i]] for i in range(len(x))])
    out: dict[str, Any] = {n: hexed(arrays[n]) for n in FFN_HEX}
    out |= {n: hashlib.sha256(np.ascontiguousarray(arrays[n], "<f4")).hexdigest()
            for n in FFN_DIGESTS}  # fmt: skip
    return out


def answer(backend: Backend, folder: Path, case: dict[str, Any]) -> dict[str, Any]:
    """The protocol's answer (conformance/README.md "Board MoE model cases")."""
    prompt, steps = [int(t) for t in case["prompt"]], int(case["new_tokens"])
    with open_vqf(folder / case["model"]) as vqf:
        model = bind(backend, vqf)
        seen = chosen_log(model)
        arrays = generate(model, prompt, steps, case["prompt_path"], ops=True)
        seen = [list(layer) for layer in seen]  # the prompt and decode steps only
        inputs = case.get("ffn_inputs")
        ffn = None
        if inputs is not None:
            shape = tuple(int(n) for n in inputs["shape"])
            x = np.fromfile(folder / inputs["file"], dtype="<f4").reshape(shape)
            ffn = ffn_answer(model, x.astype(np.float32))
    tag = "decode" if case["prompt_path"] == "prefill" else "decode_path"
    first = "prefill.logits" if tag == "decode" else "prompt.decode_path.logits"
    rows = [np.atleast_2d(arrays[first])] + [arrays[f"{tag}.step{k}.logits"] for k in range(steps)]
    ops = sorted(n for n in arrays if not n.endswith((".logits", ".tokens")))
    out = {
        "tokens": [str(t) for t in arrays[f"{tag}.tokens"].tolist()],
        "logits": hexed(np.vstack(rows).astype(np.float32)),
        "activations": {name: digest(arrays[name]) for name in ops},
        "experts": [
            {"layer": str(i), "chosen": [[str(e) for e in row] for row in layer]}
            for i, layer in enumerate(seen)
        ],
    }
    if ffn is not None:
        out["ffn"] = ffn
    return out


def case_answer(backend: Backend, folder: Path) -> dict[str, Any] | Violation:
    """The built-in adapter's answer to a `vqf-board-moe-model` case folder, or the first rule a
    rejected file breaks (conformance/README.md, "Protocol")."""
    try:
        return answer(backend, folder, read_case(folder))
    except WeightfileError as exc:
        return exc.violation


def tie_tokens(want: dict[str, Any], tie: tuple[int, int, int], k: int) -> tuple[int, int]:
    """(tokens where both tied experts are chosen, tokens where the tie falls on the k-th slot)
    in the answer's feeding order; the generator demands at least one of the latter."""
    layer, kept, dropped = (str(n) for n in tie)
    rows = want["experts"][int(layer)]["chosen"]
    both = sum(1 for r in rows if kept in r and dropped in r and r.index(kept) < r.index(dropped))
    edge = sum(1 for r in rows if len(r) == k and r[-1] == kept and dropped not in r)
    return both, edge


def accepted_cases(scratch: Path, prefix: str) -> Iterator[Case]:
    for case in CASES:
        folder = scratch / case.name
        folder.mkdir()
        model, x = pack_files(case.pack)
        (folder / "model.vqf").write_bytes(model)
        (folder / INPUTS).write_bytes(x)
        with np.load(PACKS / case.pack / "engine.npz") as npz:
            shape = [str(n) for n in npz["moe.x_in"].shape]
        fields = {"expect": "accept", "model": "model.vqf",
                  "prompt": [str(t) for t in case.prompt], "new_tokens": str(case.new_tokens),
                  "numerics": "kestrel-board", "prompt_path": case.path,
                  "ffn_inputs": {"file": INPUTS, "shape": shape},
                  "pack": f"kestrel-board-v2/{case.pack}", "description": case.meaning}  # fmt: skip
        want = answer(REFERENCE, folder, fields)
        if case.tie is not None:
            with open_vqf(folder / "model.vqf") as vqf:
                k = int(vqf.header.arch["top_k"])
            both, edge = tie_tokens(want, case.tie, k)
            if not edge or not both:
                raise RuntimeError(f"{case.name}: the prompt reaches the tie {both}, {edge} times")
        files = {"model.vqf": model, INPUTS: x}
        yield f"{prefix}/board-moe-model/qwen3_moe/{case.name}", fields, files, want


# -- rejected files --------------------------------------------------------------------------

#: The tiny base file of the rejections (transformers-style): the conformance cases' tiny MoE
#: (4 experts of 32, top 2) with the board's limits met — head_dim 32, Q8_0 8x8 tiles, an untied
#: lm_head — one layer.
BASE_HF: dict[str, Any] = MOE_HF | dict(
    vocab_size=32, hidden_size=64, num_hidden_layers=1, head_dim=32, tie_word_embeddings=False
)
SEED = 71
REJECT_PROMPT = (3, 9, 27, 4)


@dataclass(frozen=True, slots=True)
class Rejection:
    name: str
    rule: str
    meaning: str
    words: str  # what the refusal's message must say (the limit and the file's value)
    hf: dict[str, Any]
    qtype: QType = QType.Q8_0


REJECTIONS = (
    Rejection("reject-q4-experts", "vqf.bind.unsupported", "Q4_0 4x4 projections and experts: "
              "the board profile runs the Q8 MoE FFN the packs prove",
              "this file's projection set is q4", {}, QType.Q4_0),
    Rejection("reject-tied-lm-head", "vqf.bind.unsupported", "a tied lm_head: the board's "
              "logits are a Q8_0 product of a matrix of their own", "this file's lm_head is tied",
              {"tie_word_embeddings": True}),
    Rejection("reject-head-dim-16", "vqf.bind.unsupported", "head_dim 16 (4 heads): the board's "
              "decode attention needs a multiple of 32", "this file's head_dim is 16",
              {"num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16}),
    Rejection("reject-moe-width-48", "vqf.bind.moe_band", "experts 48 wide: the engine's Q8 MoE "
              "FFN would return zeros in every layer (spec/numerics.md §board-moe-defect, "
              "verify --engine-defaults: vqf.defect.moe_q8_width); the binder refuses the file, "
              "whose expert bands split 32-column blocks", "moe_ffn 48",
              {"moe_intermediate_size": 48}),
)  # fmt: skip


def base_state_dict(hf: dict[str, Any]) -> dict[str, np.ndarray]:
    """Seeded weights in transformers names: norms 1 ± 0.15, projections and experts ±0.3,
    routers ±1, the embedding and lm_head ±1."""
    ne, ie = hf["num_experts"], hf["moe_intermediate_size"]
    c = config_from_hf({**hf, "intermediate_size": ne * ie})
    d, hd = c.hidden_size, c.head_dim
    shapes = {"attn_norm": (d,), "ffn_norm": (d,), "q_norm": (hd,), "k_norm": (hd,),
              "q_proj": (c.q_dim, d), "k_proj": (c.kv_dim, d), "v_proj": (c.kv_dim, d),
              "o_proj": (d, c.q_dim)}  # fmt: skip
    base = SEED * 1000
    sd = {EMBED: uniform(base, (c.vocab_size, d)), LM_HEAD: uniform(base + 1, (c.vocab_size, d))}
    sd[FINAL_NORM] = uniform(base + 2, d, 0.15) + np.float32(1.0)
    at = base + 3
    for f in ATTENTION_FIELDS:
        one = np.float32(1.0) if f.endswith("norm") else np.float32(0.0)
        sd[layer_tensor(0, f)] = uniform(at, shapes[f], 0.15 if one else 0.3) + one
        at += 1
    sd[router_tensor(0)] = uniform(at, (ne, d), 1.0)
    for e in range(ne):
        for role, shape in (("gate", (ie, d)), ("up", (ie, d)), ("down", (d, ie))):
            at += 1
            sd[expert_tensor(0, e, role)] = uniform(at, shape, 0.3)
    return sd


def as_experts_of_32(sd: dict[str, np.ndarray], ne: int, ie: int) -> dict[str, np.ndarray]:
    """The same expert rows and down columns cut into ne·ie/32 experts of 32: gate and up stack
    by rows and down by column bands, so the stacked matrices' bytes are those of ne experts of
    ie (spec/vqf.md §text-tensors) — how a file with an expert width the importer refuses is
    written with the importer's own stacking."""
    out = {k: v for k, v in sd.items() if ".experts." not in k}
    for role in ("gate", "up", "down"):
        whole = np.concatenate(
            [sd[expert_tensor(0, e, role)] for e in range(ne)], axis=1 if role == "down" else 0
        )
        for j in range(ne * ie // 32):
            cut = whole[:, 32 * j : 32 * j + 32] if role == "down" else whole[32 * j : 32 * j + 32]
            out[expert_tensor(0, j, role)] = np.ascontiguousarray(cut)
    out[router_tensor(0)] = np.zeros((ne * ie // 32, sd[router_tensor(0)].shape[1]), np.float32)
    return out


def write_rejection(path: Path, r: Rejection) -> Path:
    """The base file with the rejection's config changes, by the importer's build_tensors (a
    tied lm_head: the file without its `*_lm` entry; an expert width off 32: see
    `as_experts_of_32`, the router then the file's own [E, d])."""
    hf = {**BASE_HF, **r.hf}
    ne, k, ie = hf["num_experts"], hf["num_experts_per_tok"], hf["moe_intermediate_size"]
    c = config_from_hf({**hf, "intermediate_size": ne * ie})
    flags = file_flags(r.qtype, "tiled") | int(VQFFlag.MOE)
    sd = base_state_dict(hf)
    router = sd[router_tensor(0)]
    cut = ie % 32 != 0
    tensors = build_tensors(as_experts_of_32(sd, ne, ie) if cut else sd, c,
                            ne * ie // 32 if cut else ne, 32 if cut else ie, r.qtype, flags,
                            REFERENCE)  # fmt: skip
    if cut:
        tensors = [TensorSource("moe_router", QType.F32, ne, c.hidden_size, router.tobytes())
                   if t.name == "moe_router" else t for t in tensors]  # fmt: skip
    if hf["tie_word_embeddings"]:
        tensors = [t for t in tensors if not t.name.endswith("_lm")]
    arch = {**arch_from_config(hf, c), "n_experts": ne, "moe_ffn": ie, "top_k": k}
    return write_vqf(path, arch=arch, tensors=tensors, flags=flags)


def reject_fields(r: Rejection) -> dict[str, Any]:
    rule = RULES[r.rule]
    return {
        "expect": "reject", "model": "model.vqf", "prompt": [str(t) for t in REJECT_PROMPT],
        "new_tokens": "2", "numerics": "kestrel-board", "prompt_path": "prefill",
        "rule": r.rule, "error_class": rule.error_class,
        "accepted": [{"rule": r.rule, "error_class": rule.error_class}],
        "section": published_section(rule), "description": f"{rule.meaning}: {r.meaning}",
    }  # fmt: skip


def check_rejection(folder: Path, r: Rejection, fields: dict[str, Any]) -> None:
    """The container is valid, the reference stops at exactly the rule with a message naming
    the limit, and the expert-width file is the one `verify --engine-defaults` names the defect
    of."""
    from weightfile.ref.vqf.engine_defects import engine_defects_file
    from weightfile.ref.vqf.validate import validate

    found = validate(folder / "model.vqf", checksum=True)
    if found:
        raise RuntimeError(f"{r.name}: the container is invalid: {found[0]}")
    got = case_answer(REFERENCE, folder)
    if not isinstance(got, Violation) or got.rule != r.rule or r.words not in got.detail:
        raise RuntimeError(f"{r.name}: the reference gave {got!r:.300}, not {r.rule} ({r.words})")
    if r.rule == "vqf.bind.moe_band":
        with open_vqf(folder / "model.vqf") as vqf:
            rules = [f.rule for f in engine_defects_file(vqf)]
        if rules != ["vqf.defect.moe_q8_width"]:
            raise RuntimeError(f"{r.name}: the engine-defect finder says {rules}")


def rejected_cases(scratch: Path, prefix: str) -> Iterator[Case]:
    """One rejected file per limit (REJECTIONS); the unedited base file answers, so each change
    alone makes its rejection."""
    base = scratch / "base"
    base.mkdir()
    write_rejection(base / "model.vqf", Rejection("base", "", "", "", {}))
    got = answer(REFERENCE, base, {**reject_fields(REJECTIONS[0]), "expect": "accept"})
    if not got["tokens"]:
        raise RuntimeError("the unedited base file does not answer")
    for r in REJECTIONS:
        folder = scratch / r.name
        folder.mkdir()
        write_rejection(folder / "model.vqf", r)
        fields = reject_fields(r)
        (folder / "case.json").write_text(json.dumps(fields))
        check_rejection(folder, r, fields)
        files = {"model.vqf": (folder / "model.vqf").read_bytes()}
        yield f"{prefix}/board-moe-model/qwen3_moe/{r.name}", fields, files, None


def corpus_cases(scratch: Path, prefix: str) -> Iterator[Case]:
    """(case id, case.json fields, files, want.json) of every board MoE model case: the accepted
    pack cases, then the rejected files."""
    sources: tuple[Callable[[Path, str], Iterator[Case]], ...] = (accepted_cases, rejected_cases)
    for source in sources:
        yield from source(scratch, prefix)
