"""The tensor inventory: names, qtypes, geometry and directory order (spec/vqf.md §directory-order,
§text-tensors, §weight-modes, §geometry, §vision-tensors).

Shapes are functions of the arch (never of the directory's diagnostic rows/cols, spec/vqf.md
§geometry). Each entry gives the writer's directory rows × cols and the physical per-layer matrix
[out, in] that tiled layouts regroup.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .arch import arch_defaults
from .placement import round_up
from .qtypes import QType


@dataclass(frozen=True, slots=True)
class Geometry:
    """The symbols of spec/vqf.md §inventory: d, nl, hd, qo, ko, ff, V, ne and the vision sizes."""

    d: int
    nl: int
    hd: int
    qo: int
    ko: int
    ff: int
    V: int
    ne: int
    moe_ffn: int
    vh: int
    vd: int
    vf: int
    vfp: int
    vp: int
    vt: int
    mi: int
    vo: int
    ds: int
    vmp: int

    @classmethod
    def from_arch(cls, arch: Mapping[str, Any]) -> Geometry:
        a = {**arch_defaults(), **arch}  # absent fields are zero, as in a memset header
        return cls(
            d=a["dim"],
            nl=a["n_layers"],
            hd=a["head_dim"],
            qo=a["n_heads"] * a["head_dim"],
            ko=a["n_kv_heads"] * a["head_dim"],
            ff=a["ffn_dim"],
            V=a["vocab_size"],
            ne=a.get("n_experts", 0),
            moe_ffn=a.get("moe_ffn", 0),
            vh=a["vis_hidden"],
            vd=a["vis_depth"],
            vf=a["vis_ffn"],
            vfp=round_up(a["vis_ffn"], 32),
            vp=a["vis_patch"],
            vt=a["vis_temporal"],
            mi=a["vis_hidden"] * a["vis_merge"] ** 2,
            vo=a["vis_out_dim"],
            ds=a["vis_ds_count"],
            vmp=a["vis_max_pos"],
        )


Shape = Callable[[Geometry], tuple[int, int]]
Physical = Callable[[Geometry], tuple[int, int, int]]  # (matrices, out, in)


@dataclass(frozen=True, slots=True)
class TensorKind:
    """One inventory row: the name, its family, allowed qtypes and geometry."""

    name: str
    family: str  # embed | norm | router | q8 | q4 | x8 | vision_q8 | vision_f32
    qtypes: tuple[QType, ...]
    directory_shape: Shape  # what writers put in rows × cols (diagnostic)
    physical: Physical  # the matrices that tiling regroups: (count, out, in)

    def elements(self, g: Geometry) -> int:
        rows, cols = self.directory_shape(g)
        return rows * cols


_F32 = (QType.F32,)
_QT = {"q8": (QType.Q8_0,), "q4": (QType.Q4_0,), "x8": (QType.Q4_8X8L,)}

#: Projection matrices per layer: (short name, directory shape, physical [out, in]).
_PROJECTIONS: tuple[tuple[str, Shape, Callable[[Geometry], tuple[int, int]]], ...] = (
    ("q", lambda g: (g.nl * g.d, g.qo), lambda g: (g.qo, g.d)),
    ("k", lambda g: (g.nl * g.d, g.ko), lambda g: (g.ko, g.d)),
    ("v", lambda g: (g.nl * g.d, g.ko), lambda g: (g.ko, g.d)),
    ("o", lambda g: (g.nl * g.qo, g.d), lambda g: (g.d, g.qo)),
    ("gate", lambda g: (g.nl * g.ff, g.d), lambda g: (g.ff, g.d)),
    ("up", lambda g: (g.nl * g.ff, g.d), lambda g: (g.ff, g.d)),
    ("down", lambda g: (g.nl * g.d, g.ff), lambda g: (g.d, g.ff)),
)


#: The projections whose directory shape is nl·out × in; q/k/v/o record nl·in × out (the
#: engine's writer, spec/vqf.md §text-tensors, §geometry).
OUT_MAJOR = ("gate", "up", "down")


def stacked_directory_shape(name: str, count: int, out: int, inner: int) -> tuple[int, int]:
    """The directory rows × cols of `count` stacked [out, in] matrices named `name` (the
    _PROJECTIONS shapes above, for any geometry)."""
    if name.split("_", 1)[-1] in OUT_MAJOR:
        return count * out, inner
    return count * inner, out


def _per_layer(out_in: Callable[[Geometry], tuple[int, int]]) -> Physical:
    return lambda g: (g.nl, *out_in(g))


def _flat(shape: Shape) -> Physical:
    return lambda g: (1, *shape(g))


_TEXT_HEAD = (
    TensorKind(
        "token_embed",
        "embed",
        (QType.F16, QType.F32),
        lambda g: (g.V, g.d),
        lambda g: (1, g.V, g.d),
    ),
    TensorKind("final_norm", "norm", _F32, lambda g: (g.d, 1), lambda g: (1, 1, g.d)),
    TensorKind("attn_norm", "norm", _F32, lambda g: (g.nl * g.d, 1), lambda g: (g.nl, 1, g.d)),
    TensorKind("ffn_norm", "norm", _F32, lambda g: (g.nl * g.d, 1), lambda g: (g.nl, 1, g.d)),
    TensorKind("q_norm", "norm", _F32, lambda g: (g.nl * g.hd, 1), lambda g: (g.nl, 1, g.hd)),
    TensorKind("k_norm", "norm", _F32, lambda g: (g.nl * g.hd, 1), lambda g: (g.nl, 1, g.hd)),
    TensorKind(
        "moe_router",
        "router",
        _F32,
        lambda g: (g.nl * g.ne, g.d),
        lambda g: (g.nl, g.ne, g.d),
    ),
)


def _matrices(prefix: str, with_lm: bool) -> tuple[TensorKind, ...]:
    kinds = [
        TensorKind(f"{prefix}_{short}", prefix, _QT[prefix], shape, _per_layer(phys))
        for short, shape, phys in _PROJECTIONS
    ]
    if with_lm:
        lm: Shape = lambda g: (g.V, g.d)  # noqa: E731
        kinds.append(TensorKind(f"{prefix}_lm", prefix, _QT[prefix], lm, _flat(lm)))
    return tuple(kinds)


def _v(name: str, shape: Shape, q8: bool = False) -> TensorKind:
    family, qtypes = ("vision_q8", (QType.Q8_0,)) if q8 else ("vision_f32", _F32)
    return TensorKind(name, family, qtypes, shape, _flat(shape))


#: The 27 vision tensors in spec/vqf.md §vision-tensors table order (the writer's directory order
#: too).
VISION_KINDS = (
    _v("v_q8_qkv", lambda g: (g.vd, 3 * g.vh * g.vh), q8=True),
    _v("v_q8_proj", lambda g: (g.vd, g.vh * g.vh), q8=True),
    _v("v_q8_fc1", lambda g: (g.vd, g.vf * g.vh), q8=True),
    _v("v_q8_fc2", lambda g: (g.vd, g.vh * g.vfp), q8=True),
    _v("v_patch_embed", lambda g: (1, g.vh * 3 * g.vt * g.vp * g.vp)),
    _v("v_patch_bias", lambda g: (1, g.vh)),
    _v("v_pos_embed", lambda g: (1, g.vmp * g.vh)),
    _v("v_qkv_bias", lambda g: (g.vd, 3 * g.vh)),
    _v("v_proj_bias", lambda g: (g.vd, g.vh)),
    _v("v_norm1_w", lambda g: (g.vd, g.vh)),
    _v("v_norm1_b", lambda g: (g.vd, g.vh)),
    _v("v_norm2_w", lambda g: (g.vd, g.vh)),
    _v("v_norm2_b", lambda g: (g.vd, g.vh)),
    _v("v_fc1_bias", lambda g: (g.vd, g.vf)),
    _v("v_fc2_bias", lambda g: (g.vd, g.vh)),
    _v("v_merger_nw", lambda g: (1, g.vh)),
    _v("v_merger_nb", lambda g: (1, g.vh)),
    _v("v_merger_f1w", lambda g: (1, g.mi * g.mi)),
    _v("v_merger_f1b", lambda g: (1, g.mi)),
    _v("v_merger_f2w", lambda g: (1, g.mi * g.vo)),
    _v("v_merger_f2b", lambda g: (1, g.vo)),
    _v("v_ds_nw", lambda g: (g.ds, g.mi)),
    _v("v_ds_nb", lambda g: (g.ds, g.mi)),
    _v("v_ds_f1w", lambda g: (g.ds, g.mi * g.mi)),
    _v("v_ds_f1b", lambda g: (g.ds, g.mi)),
    _v("v_ds_f2w", lambda g: (g.ds, g.mi * g.vo)),
    _v("v_ds_f2b", lambda g: (g.ds, g.vo)),
)

Q8_KINDS = _matrices("q8", with_lm=True)
Q4_KINDS = _matrices("q4", with_lm=True)
X8_KINDS = _matrices("x8", with_lm=False)

#: Every known tensor, in the directory order writers emit (spec/vqf.md §directory-order).
DIRECTORY_ORDER: tuple[TensorKind, ...] = (
    *_TEXT_HEAD,
    *Q8_KINDS,
    *Q4_KINDS,
    *X8_KINDS,
    *VISION_KINDS,
)
KINDS: dict[str, TensorKind] = {k.name: k for k in DIRECTORY_ORDER}
ORDER_INDEX: dict[str, int] = {k.name: i for i, k in enumerate(DIRECTORY_ORDER)}

#: wmode -> the projection sets it emits (spec/vqf.md §weight-modes); x8 copies are an option of
#: wmode q4.
WMODE_PROJECTION_SETS: dict[str, tuple[str, ...]] = {
    "dual": ("q8", "q4"),
    "q4": ("q4",),
    "q8": ("q8",),
    "q4i": ("q8",),
    "g256": ("q8",),
}


def inventory(
    arch: Mapping[str, Any], wmode: str, *, x8: bool = False, vision: bool | None = None
) -> list[TensorKind]:
    """The tensors a writer emits for `arch` in `wmode`, in spec/vqf.md §directory-order order."""
    if wmode not in WMODE_PROJECTION_SETS:
        raise ValueError(
            f"unknown wmode {wmode!r}; expected one of {sorted(WMODE_PROJECTION_SETS)}"
        )
    sets = set(WMODE_PROJECTION_SETS[wmode]) | ({"x8"} if x8 else set())
    if vision is None:
        vision = bool(arch.get("vis_depth"))
    kinds: list[TensorKind] = []
    for kind in DIRECTORY_ORDER:
        if kind.name in ("q_norm", "k_norm") and not arch.get("has_q_norm"):
            continue
        if kind.family == "router" and not arch.get("n_experts"):
            continue
        if kind.family in ("q8", "q4", "x8") and kind.family not in sets:
            continue
        if kind.family.startswith("vision") and not vision:
            continue
        kinds.append(kind)
    return kinds
