"""`weightfile bench --mtp K`: MTP speculative decoding beside plain decoding on small synthetic
Qwen3.5 `.ninfer` models, on the fast engine (spec/models.md §qwen35-mtp-round).

Two models of one geometry (`GEOMETRY`, q8_g32_fp16 matrices), written once into the cache
folder: `random` (seeded weights: the MTP head drafts nearly at random, so acceptance is near 0
and speculation only costs) and `agreeing` (spec/models.md §qwen35-mtp "A head that always
agrees": every output projection zero, so drafts equal the target's next token). The agreeing
model also carries an indexed proposal head whose rows are the tokens the model itself emits
most often (`frequent_ids`: its own frequency table). Rows: plain decode t/s, MTP decode t/s,
the speed-up, acceptance and tokens per round, and one draft step's time as a fraction of one
decode step's.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.families.qwen35.mtp_files import agreeing, bind_mtp, bind_proposal
from weightfile.fast.codecs.ninfer3.codec import get_codec
from weightfile.ref.ninfer3.plan import ResourceSpec, TensorSpec
from weightfile.ref.ninfer3.write import write_artifact
from weightfile.spec.ninfer3.mtp_names import mtp_parameters
from weightfile.spec.ninfer3.text_names import fusion_groups, text_parameters

GENERATOR = "4"  # bump when the files' bytes change
MATRIX = "q8_g32_fp16"
GEOMETRY: dict[str, Any] = {
    "architectures": ["Qwen3_5ForCausalLM"], "model_type": "qwen3_5_text", "hidden_size": 512,
    "vocab_size": 8192, "num_hidden_layers": 8, "max_position_embeddings": 4096,
    "tie_word_embeddings": False, "rms_norm_eps": 1e-6,
    "layer_types": ["linear_attention"] * 3 + ["full_attention"] + ["linear_attention"] * 3
    + ["full_attention"],
    "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 64,
    "rope_parameters": {"rope_theta": 10000000, "partial_rotary_factor": 0.25,
                        "mrope_section": [4, 2, 2]},
    "linear_num_key_heads": 4, "linear_key_head_dim": 64, "linear_num_value_heads": 8,
    "linear_value_head_dim": 64, "linear_conv_kernel_dim": 4, "intermediate_size": 1536,
}  # fmt: skip
PROPOSAL_ROWS = 1024
RESOURCES = {"tokenizer.json": b'{"model": {}}', "tokenizer_config.json": b"{}",
             "chat_template.jinja": b"{{ messages }}",
             "generation_config.json": b'{"eos_token_id": -1}'}  # fmt: skip


def values(seed: int, agree: bool) -> tuple[dict, dict]:
    """(text, MTP) float32 parameters: N(0, 0.05) matrices, norms near their neutral values."""
    rng = np.random.default_rng(seed)

    def draw(p) -> np.ndarray:
        v = rng.normal(0.0, 1.0 if p.name.endswith("token_embedding") else 0.05, p.shape)
        if p.name.endswith(("gdn/norm", "gdn/dt_bias")):
            v = 1.0 + v
        return v.astype(np.float32)

    text = {p.name: draw(p) for p in text_parameters(GEOMETRY)}
    mtp = {p.name: draw(p) for p in mtp_parameters(GEOMETRY)}
    agreeing(text, mtp, 1.0 if agree else 0.0)
    return text, mtp


def stored(v: np.ndarray, fmt: str) -> np.ndarray:
    """The values the file holds for `v` in `fmt` (encoded, then decoded)."""
    layout = "contiguous_le_v1" if fmt == "bf16" else "row_split_k128_v1"
    codec = get_codec(fmt, layout)
    return np.asarray(codec.decode(codec.encode(v, v.shape), v.shape), np.float32).reshape(v.shape)


def frequent_ids(text: dict, rows: int) -> np.ndarray:
    """The agreeing model's next token is a function f(x) = argmax(head · norm(embed(x))) of the
    current token (computed here in NumPy): its greedy continuations run into f's cycles. The
    proposal rows are the `rows` tokens met most often in f(x) … f⁶⁴(x) over every start x (ties:
    lower id) — the frequency table of the model's own continuations."""
    e, w, head = (stored(text[n], fmt) for n, fmt in (
        ("text/token_embedding", "bf16"), ("text/final_norm", "bf16"),
        ("text/output_head", MATRIX)))  # fmt: skip
    n = e / np.sqrt(np.mean(e * e, axis=1, keepdims=True) + 1e-6)
    f = np.argmax((n * (1 + w)) @ head.T, axis=1)
    counts = np.zeros(e.shape[0], np.int64)
    x = np.arange(e.shape[0])
    for _ in range(64):
        x = f[x]
        counts += np.bincount(x, minlength=e.shape[0])
    return np.lexsort((np.arange(e.shape[0]), -counts))[:rows]


def write_model(path: Path, agree: bool) -> Path:
    """One synthetic file (module docstring), every matrix q8_g32_fp16 in its own object except
    the fused parents of the default grouping."""
    text, mtp = values(11, agree)
    data: dict[str, bytes] = {}
    objects: list[Any] = []
    bindings: dict[str, Any] = {}
    uses: list[dict[str, Any]] = []

    def tensor(oid: str, v: np.ndarray, fmt: str | None) -> None:
        f, layout = (fmt, "contiguous_le_v1") if fmt else (MATRIX, "row_split_k128_v1")
        shape = tuple(int(d) for d in v.shape)
        data[oid] = get_codec(f, layout).encode(np.ascontiguousarray(v, np.float32), shape)
        objects.append(TensorSpec(oid, shape, f, layout))

    def ids_object(oid: str, ids: np.ndarray) -> None:
        data[oid] = get_codec("int32", "contiguous_le_v1").encode(ids, ids.shape)
        objects.append(TensorSpec(oid, ids.shape, "int32", "contiguous_le_v1"))

    bind_text(text, tensor, bindings, uses)
    components: dict[str, Any] = {"mtp": bind_mtp(GEOMETRY, mtp, tensor, bindings, uses)}
    resources = {role: f"r.{role}" for role in RESOURCES}
    for role, blob in RESOURCES.items():
        data[f"r.{role}"] = blob
        objects.append(ResourceSpec(f"r.{role}", len(blob)))
    record: dict[str, Any] = {"config": GEOMETRY, "resources": resources}
    if agree:
        ids = frequent_ids(text, PROPOSAL_ROWS)
        head = text["text/output_head"][ids]
        record["proposal"] = bind_proposal(head, ids, tensor, ids_object, bindings, uses)
    components = {"text": record, **components}
    (entry,) = write_artifact(path, data, objects=objects, components=components,
                              bindings=bindings, uses=uses)  # fmt: skip
    return entry


def bind_text(text: dict, tensor, bindings: dict, uses: list) -> None:
    """The text parameters: each layer's first fusion group one parent, the rest whole."""
    part_of: dict[str, dict] = {}
    for layer in range(GEOMETRY["num_hidden_layers"]):
        group = fusion_groups(GEOMETRY, layer)[0]
        parent = f"w.parent.{layer}"
        tensor(parent, np.concatenate([text[n] for n in group]), None)
        at = 0
        for name in group:
            part_of[name] = {"object": parent, "range": [at, at + text[name].size]}
            at += text[name].size
    for p in text_parameters(GEOMETRY):
        if p.name in part_of:
            bindings[p.name] = {"parts": [part_of[p.name]]}
        else:
            tensor("w." + p.name, text[p.name], p.direct_format)
            bindings[p.name] = {"object": "w." + p.name}
        uses += [{"parameter": p.name, "input": i, "activation_policy": "A16Only"}
                 for i in p.inputs]  # fmt: skip


def model_path(agree: bool, cache_dir: str | None) -> Path:
    """The cached file (written on first use)."""
    from weightfile.ref.user_cache import cache_dir as default

    folder = Path(cache_dir) if cache_dir is not None else default("synthetic")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"qwen35-mtp-{'agreeing' if agree else 'random'}-g{GENERATOR}.ninfer"
    if not path.is_file():
        write_model(path, agree)
    return path


@dataclass
class Row:
    model: str
    head: str
    k: int
    plain_tps: float
    mtp_tps: float
    acceptance: float
    tokens_per_round: float
    draft_fraction: float

    def cells(self) -> list[str]:
        return [self.model, self.head, str(self.k), f"{self.plain_tps:.1f}",
                f"{self.mtp_tps:.1f}", f"{self.mtp_tps / self.plain_tps:.2f}x",
                f"{self.acceptance:.3f}", f"{self.tokens_per_round:.2f}",
                f"{self.draft_fraction:.3f}"]  # fmt: skip


HEADER = ["model", "draft head", "K", "plain t/s", "MTP t/s", "speed-up", "acceptance",
          "tokens/round", "draft step / decode step"]  # fmt: skip


def median_seconds(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def step_fraction(model: Any, head: Any, reps: int) -> float:
    """One MTP draft step (one entry, its head row) over one decode step, medians of `reps`."""
    from weightfile.fast.qwen35.mtp import FastVerifier

    verifier = FastVerifier(model)
    cache, mcache = verifier.new_cache(), head.new_cache()
    prompt = list(range(1, 9))
    h, _ = verifier.run(prompt, cache, record=False)
    head.extend([*prompt[1:], 9], h, mcache)
    decode = median_seconds(lambda: model.forward([5], cache), reps)
    draft = median_seconds(lambda: head.extend([5], h[-1:], mcache), reps)
    return draft / decode


def measure(path: Path, k: int, proposal: bool, n_gen: int, threads: int, reps: int) -> Row:
    """Plain and speculative greedy decoding of `n_gen` tokens after an 8-token prompt (each
    timed from the prompt, medians of `reps`); the two must emit the same tokens."""
    from weightfile.fast.qwen35 import open_model
    from weightfile.fast.qwen35.mtp import FastVerifier, open_mtp
    from weightfile.frontend.generate import stream_tokens
    from weightfile.ref.ninfer3.read import open_artifact
    from weightfile.ref.qwen35.speculative import Speculation

    prompt = list(range(1, 9))
    with open_artifact(path) as nf:
        model = open_model(nf, threads=threads)
        head = open_mtp(nf, model, proposal)
        plain = list(stream_tokens(model, prompt, n_gen))
        t_plain = median_seconds(lambda: list(stream_tokens(model, prompt, n_gen)), reps)
        runs: list[Speculation] = []

        def speculate() -> None:
            runs.append(Speculation(FastVerifier(model), head, k))
            if list(runs[-1].tokens(prompt, n_gen)) != plain:
                raise RuntimeError("speculative tokens differ from plain greedy decoding")

        t_mtp = median_seconds(speculate, reps)
        fraction = step_fraction(model, head, 4 * reps)
    rounds = runs[-1].rounds
    drafted = sum(len(r.draft_tokens) for r in rounds)
    accepted = sum(r.accepted for r in rounds)
    name = path.stem.split("-")[2]
    per_round = (accepted + len(rounds)) / len(rounds)
    kind = "proposal" if proposal else "full"
    rate = accepted / max(drafted, 1)
    return Row(name, kind, k, n_gen / t_plain, n_gen / t_mtp, rate, per_round, fraction)


def mtp_report(k: int, n_gen: int, threads: int, reps: int, cache_dir: str | None) -> list[Row]:
    """The three rows: the random model (full head), the agreeing model with the full head and
    with its proposal head."""
    random_model, agreeing_model = model_path(False, cache_dir), model_path(True, cache_dir)
    return [
        measure(random_model, k, False, n_gen, threads, reps),
        measure(agreeing_model, k, False, n_gen, threads, reps),
        measure(agreeing_model, k, True, n_gen, threads, reps),
    ]


def render(rows: list[Row]) -> str:
    """A Markdown table (weightfile/_table.py's printer)."""
    from weightfile._table import markdown

    return "\n".join(markdown(HEADER, [r.cells() for r in rows], right=range(2, 9)))
