"""`weightfile diff A.npz B.npz`: compare two dumps array by array, bit for bit.

Either file may be a board dump (the names of spec/numerics.md §board-prompts: `prefill.logits`,
`decode.step{k}.logits`, `decode.step0.layer{l}.q_proj`, ...), a `run --save-logits` file, or
a `weightfile trace` file: a trace (`layers.L.<op>`, [tokens, width]) is first read in the
board's names for its last prompt token (`prefill.last.layer{l}.<op>`, `prefill.logits`), so a
canonical trace can be held against a board dump. Per array: max |Δ|, the largest distance in
ulps, and the first differing element with both bit patterns; then the first operation, in
forward-pass order, where the two diverge. Exit 0 when every common array is bit-identical,
1 when one differs (or nothing is in common).
"""

from __future__ import annotations

import argparse
import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.spec.errors import InvalidError

#: Per-op names in forward-pass order (spec/numerics.md §board-prompts).
OP_ORDER = (
    "attn_norm", "q_proj", "k_proj", "v_proj", "q_norm", "k_norm", "q_rope", "k_rope",
    "attn_out", "o_proj_residual", "ffn_norm", "gate_proj", "up_proj", "silu_mul",
    "down_residual",
)  # fmt: skip
#: Trace op names (ref/qwen3/trace.py) that have a board counterpart.
TRACE_TO_BOARD = {
    "attn_norm": "attn_norm", "q_proj": "q_proj", "k_proj": "k_proj", "v_proj": "v_proj",
    "q_norm": "q_norm", "k_norm": "k_norm", "q_rope": "q_rope", "k_rope": "k_rope",
    "attn": "attn_out", "attn_residual": "o_proj_residual", "ffn_norm": "ffn_norm",
    "gate_proj": "gate_proj", "up_proj": "up_proj", "swiglu": "silu_mul",
    "ffn_residual": "down_residual",
}  # fmt: skip
LAYER_OP = re.compile(r"(?P<phase>.+)\.layer(?P<layer>\d+)\.(?P<op>\w+)")
TRACE_OP = re.compile(r"layers\.(?P<layer>\d+)\.(?P<op>\w+)")


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "diff",
        help="compare two .npz dumps (board dump, run --save-logits, trace) bit for bit",
        description=(
            "Compare the arrays two .npz files have in common: max |delta|, ulps, the first "
            "differing element, and the first operation and layer where they diverge. A "
            "weightfile trace is compared under the board's names for its last token. Exit 0 "
            "equal, 1 different."
        ),
    )
    parser.add_argument("a", type=Path, help="the first .npz")
    parser.add_argument("b", type=Path, help="the second .npz")
    parser.set_defaults(run=run)


def load(path: Path) -> dict[str, np.ndarray]:
    """The arrays of an .npz (a trace read in board names); frontend.npz.invalid otherwise."""
    with open(path, "rb") as fh:  # an .npz is a zip archive: say so before numpy guesses
        head = fh.read(4)
    if head != b"PK\x03\x04":
        what = "the file is empty" if not head else "no zip archive; an .npy or a model file?"
        raise InvalidError(
            "frontend.npz.invalid", f"{path}: not an .npz of arrays ({what})", path=str(path)
        )
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {n: z[n] for n in z.files}
    except (zipfile.BadZipFile, ValueError, EOFError) as exc:
        raise InvalidError(
            "frontend.npz.invalid", f"{path}: not an .npz of arrays ({exc})", path=str(path)
        ) from None
    if isinstance(arrays, dict) and "input_ids" in arrays and any(map(TRACE_OP.match, arrays)):
        return board_names_of_trace(arrays)
    return arrays


def board_names_of_trace(trace: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A `weightfile trace` file's last prompt token in the board's names (`prefill.last.*`)."""
    out: dict[str, np.ndarray] = {}
    for name, value in trace.items():
        m = TRACE_OP.fullmatch(name)
        if m and m["op"] in TRACE_TO_BOARD:
            out[f"prefill.last.layer{m['layer']}.{TRACE_TO_BOARD[m['op']]}"] = value[-1]
    if "final_norm" in trace:
        out["prefill.last.final_norm"] = trace["final_norm"][-1]
    if "logits" in trace:
        out["prefill.logits"] = trace["logits"][-1]
    return out


def ordered_ints(a: np.ndarray) -> np.ndarray:
    """float32 bit patterns mapped to integers in the order of the values (±0 both 0)."""
    u = a.astype(np.float32).view(np.uint32).astype(np.int64)
    return np.where(u >= 1 << 31, (1 << 31) - u, u)


def compare(name: str, a: np.ndarray, b: np.ndarray) -> str | None:
    """One line describing how a and b differ, or None when they are bit-identical."""
    if a.shape != b.shape:
        return f"{name}: shape {a.shape} vs {b.shape}"
    if a.dtype.kind in "iu" or b.dtype.kind in "iu":
        if np.array_equal(a, b):
            return None
        i = int(np.flatnonzero(a.ravel() != b.ravel())[0])
        return f"{name}: first differing element [{i}]: {a.ravel()[i]} vs {b.ravel()[i]}"
    fa, fb = a.astype(np.float32).ravel(), b.astype(np.float32).ravel()
    differ = fa.view(np.uint32) != fb.view(np.uint32)
    differ &= ~(np.isnan(fa) & np.isnan(fb))  # two NaNs are equal whatever their payload
    if not differ.any():
        return None
    i = int(np.flatnonzero(differ)[0])
    with np.errstate(invalid="ignore"):
        delta = float(np.nanmax(np.abs(fa.astype(np.float64) - fb)))
    ulps = int(np.max(np.abs(ordered_ints(fa) - ordered_ints(fb))[differ]))
    bits_a, bits_b = int(fa.view(np.uint32)[i]), int(fb.view(np.uint32)[i])
    return (
        f"{name}: {int(differ.sum())} of {fa.size} differ, max |delta| {delta:.6g}, max {ulps} "
        f"ulps; first [{i}]: {float(fa[i]):.9g} (0x{bits_a:08x}) vs {float(fb[i]):.9g} "
        f"(0x{bits_b:08x})"
    )


def forward_order(name: str) -> tuple:
    """Sort key: phase, then layer, then the op's place in the layer; logits last."""
    m = LAYER_OP.fullmatch(name)
    if m:
        op = OP_ORDER.index(m["op"]) if m["op"] in OP_ORDER else len(OP_ORDER)
        return (m["phase"], 1, int(m["layer"]), op, name)
    phase, _, leaf = name.rpartition(".")
    rank = {"embedding": 0, "final_norm": 2}.get(leaf, 3)
    return (phase or name, rank, 0, 0, name)


def run(args: argparse.Namespace) -> int:
    a, b = load(args.a), load(args.b)
    common = sorted(set(a) & set(b), key=forward_order)
    only = sorted(set(a) ^ set(b))
    if only:
        print(f"{len(only)} arrays in one file only (not compared): {', '.join(only[:8])}"
              + (" ..." if len(only) > 8 else ""))  # fmt: skip
    if not common:
        print("no arrays in common")
        return 1
    lines = [(n, line) for n in common if (line := compare(n, a[n], b[n])) is not None]
    for _, line in lines:
        print(line)
    per_op = (".embedding", ".final_norm")
    ops = [n for n, _ in lines if LAYER_OP.fullmatch(n) or n.endswith(per_op)]
    if ops:
        first = ops[0]
        m = LAYER_OP.fullmatch(first)
        where = f"layer {m['layer']} op {m['op']}" if m else first.rpartition(".")[2]
        phase = m["phase"] if m else first.rpartition(".")[0]
        print(f"first divergence: {phase}: {where}")
    print(f"{len(common) - len(lines)} of {len(common)} common arrays bit-identical")
    return 1 if lines else 0
