"""The profile registry: which models run a model family under a numerics profile
(spec/numerics.md §profiles, §board; issue 27).

A numerics profile fixes the float32 operation sequence of every operation
(`weightfile.spec.numerics.profile.NumericsProfile`, declarative). A row here names it and, per
model family (the names of the family registry, `weightfile.families`), the code that runs a
family's file under it:

* `canonical` runs every family with the family's own reference and fast models (the family
  registry's rows: one forward pass per family, batch invariant, spec/numerics.md
  §batch-invariance);
* `kestrel-board` runs the dense Qwen3 family with its board models (`ref/qwen3/board`,
  `fast/qwen3/board`, spec/numerics.md §board-forward), the Qwen3-MoE family with the same
  models around the engine's Q8 MoE FFN (`ref/qwen3_moe/board`, `fast/qwen3_moe/board`,
  spec/numerics.md §board-moe-model) — a different sequence of operations, not a different kernel
  table —, and the Qwen3-VL family's vision tower (`ref/qwen3_vl/board`, spec/numerics.md
  §board-vision) beside the same text model, which takes the visual rows in the engine's
  multimodal prefill (spec/numerics.md §board-vl-prefill: from its source, not yet verified).

Code is named as "module:attribute" strings, imported on first use (as in the family registry).
Asking a profile for a family it has no models for raises a typed UnsupportedError. The CLI's
`--profile` choices are `names()`. Adding a profile is one row here plus its model packages;
adding a board model for another family is one more `FamilyModels` entry in a row.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from weightfile.families import ROWS as FAMILY_ROWS
from weightfile.families import Family, Model, resolve
from weightfile.spec.errors import UnsupportedError
from weightfile.spec.numerics.profile import CANONICAL, KESTREL_BOARD, NumericsProfile


@dataclass(frozen=True)
class FamilyModels:
    """One family's code under one profile, each a "module:attribute" string:

    reference  (open source) -> the profile's reference model of the file
    fast       (open source, threads=n) -> the same numbers from the C kernels; None: engine
               fast runs the reference
    generate   (model, prompt, steps, path, ops, stop_ids) -> the prompt path and greedy decode
               steps in the engine dumps' names (spec/numerics.md §board-prompts); None: the
               canonical, batch-invariant pass (weightfile/frontend/board_session.py)
    """

    reference: str
    fast: str | None = None
    generate: str | None = None


@dataclass(frozen=True)
class Profile:
    """One registry row: a profile's name, its declarative numerics and its models per family.

    `models` None means every family's own models (the family registry's rows); otherwise the
    families the profile runs, by family name. `runs` says which files those are, for --help
    and refusals."""

    name: str
    numerics: NumericsProfile
    summary: str
    runs: str
    models: Mapping[str, FamilyModels] | None = None
    limits: str = ""  # what else a file needs, for --help (the models' own checks refuse it)

    @property
    def canonical(self) -> bool:
        """True for the profile every family runs with its own models (spec/numerics.md
        §profiles)."""
        return self.models is None

    def require_container(self, container: str) -> None:
        """Refuse a file format none of the profile's families comes in, before it is read."""
        if self.models is None:
            return
        if not any(r.container == container for r in FAMILY_ROWS if r.name in self.models):
            raise UnsupportedError(
                "frontend.profile.unsupported",
                f"the {self.name} profile runs {self.runs}, not .{container}",
                path="--profile",
            )

    def family_models(self, family: Family) -> FamilyModels | None:
        """The profile's own models for `family` (None: the family row's); a family the profile
        does not run raises the binder's UnsupportedError (vqf.bind.unsupported)."""
        family.require_supported()
        if self.models is None:
            return None
        if family.name not in self.models:
            raise UnsupportedError(
                "vqf.bind.unsupported",
                f"the {self.name} profile runs {self.runs}, not the {family.name} family",
                path="header",
            )
        return self.models[family.name]

    def has_fast(self, family: Family) -> bool:
        """True when the profile has a fast forward pass for `family` (the C kernels aside)."""
        own = self.family_models(family)
        return family.has_fast if own is None else own.fast is not None

    def reference_model(self, family: Family, source: Any, **hooks: Any) -> Model:
        """The profile's reference model of an open file (its weights decoded)."""
        own = self.family_models(family)
        if own is None:
            return family.reference_model(source, **hooks)
        return resolve(own.reference)(source, **hooks)

    def fast_model(self, family: Family, source: Any, threads: int = 1) -> Model:
        """The profile's fast model of an open file (keep the file open while it is used)."""
        own = self.family_models(family)
        if own is None:
            return family.fast_model(source, threads=threads)
        if own.fast is None:
            raise RuntimeError(f"profile {self.name} has no fast {family.name} model")
        return resolve(own.fast)(source, threads=threads)

    def generator(self, family: str) -> Any | None:
        """The profile's own generate function for `family` (see FamilyModels), or None."""
        own = (self.models or {}).get(family)
        return None if own is None or own.generate is None else resolve(own.generate)


#: The registry: one row per numerics profile.
ROWS: tuple[Profile, ...] = (
    Profile(
        name=CANONICAL.name,
        numerics=CANONICAL,
        summary="the canonical numerics (spec/numerics.md §profiles)",
        runs="every model family",
    ),
    Profile(
        name=KESTREL_BOARD.name,
        numerics=KESTREL_BOARD,
        summary="the RK3588 engine's own arithmetic bit for bit (spec/numerics.md §board)",
        runs="dense Qwen3, Qwen3-MoE and Qwen3-VL VQF files",
        limits="with either --engine, the same bits; all projections "
        "Q4_0 or all Q8_0 (Qwen3-MoE: Q8_0), an untied lm_head, head_dim a multiple of 32 and "
        "at most 256, an FFN width a multiple of 4; greedy decoding",
        models=MappingProxyType(
            {
                "qwen3": FamilyModels(
                    reference="weightfile.ref.qwen3.board.model:bind_board",
                    fast="weightfile.fast.qwen3.board.model:bind_board_fast",
                    generate="weightfile.ref.qwen3.board.model:generate",
                ),
                "qwen3_moe": FamilyModels(
                    reference="weightfile.ref.qwen3_moe.board.model:bind_board_moe",
                    fast="weightfile.fast.qwen3_moe.board.model:bind_board_moe_fast",
                    generate="weightfile.ref.qwen3.board.model:generate",
                ),
                "qwen3_vl": FamilyModels(
                    reference="weightfile.ref.qwen3_vl.board.model:bind_board_vl",
                    fast="weightfile.fast.qwen3_vl.board.model:bind_board_vl_fast",
                    generate="weightfile.ref.qwen3_vl.board.model:generate",
                ),
            }
        ),
    ),
)

#: The profile every family runs unless told otherwise (the CLI's default).
DEFAULT = CANONICAL.name


def names() -> tuple[str, ...]:
    """Every profile's name, in registry order (the CLI's --profile choices)."""
    return tuple(p.name for p in ROWS)


def profile_named(name: str) -> Profile:
    """The row called `name`; KeyError lists the known names."""
    for p in ROWS:
        if p.name == name:
            return p
    raise KeyError(f"unknown numerics profile {name!r}; known: {list(names())}")
