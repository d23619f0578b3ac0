"""The family registry: which code serves a model file (issue 12; spec/vqf.md §2.5, §9;
spec/ninfer3.md §6.1).

One row per model family maps (container, architecture) to its reference binder, reference
model, fast model (or None) and trace-name table. `weightfile run` / `trace` (weightfile/frontend),
`bench` (weightfile/bench/engines.py) and the conformance generator's model cases ask this module
and nothing else which family a file is and how to load it.

The architecture is what the container says:
* VQF stores no architecture string; the header's version and flags decide (`vqf_architecture`):
  version 3 or the MOE flag is Qwen3-MoE, else flag VISION is Qwen3-VL (the vision tower on the
  dense decoder, ref/qwen3_vl), anything else the dense Qwen3 text decoder.
* `.ninfer` names it in the text component's config (`architectures`, a one-element list,
  spec/ninfer3.md §6.1).

A row names its code as "module:attribute" strings, imported on first use, so that opening a VQF
never imports the `.ninfer` families and the other way round; tests/test_families.py resolves
every row. A family that is recognised but not implemented has a `refusal` instead: using it
raises that typed error.

Adding a family is one package plus one row:
* `ref/<family>/`: config, weights, binder (source -> (config, weights)), model (built from the
  family-neutral `weightfile.ref.layers`) and `trace.py`, the trace-name table its blocks record
  through `layers.trace.emit`, with `names_for(config)`;
* optionally `fast/<family>/` with `open_model(source, *, threads)`, bit for bit the reference;
* one `Family` row in `ROWS` below naming them (for Qwen3-MoE: replace the row's refusal).
tests/test_families.py then checks the row resolves and its architectures look it up.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import import_module
from typing import TYPE_CHECKING, Any, Protocol

from weightfile.spec.errors import InvalidError, UnsupportedError, WeightfileError
from weightfile.spec.ninfer3.directory import TEXT_COMPONENT
from weightfile.spec.ninfer3.text_config import DENSE_ARCHITECTURE, MOE_ARCHITECTURE
from weightfile.spec.vqf.flags import VQFFlag

if TYPE_CHECKING:
    from weightfile.ref.ninfer3.read import Artifact
    from weightfile.ref.vqf.read import VQFFile

#: Container names, as `weightfile.formats.sniff` spells them.
VQF = "vqf"
NINFER = "ninfer"

#: The architectures a VQF header can say (spec/vqf.md §2.2, §2.5: version 2 or 3, flag MOE).
QWEN3 = "qwen3"
QWEN3_MOE = "qwen3_moe"
QWEN3_VL = "qwen3_vl"  # a dense file with flag VISION: the tower and its text decoder


class Model(Protocol):
    """What every family's model (reference or fast) offers its callers: its config, a cache
    and a forward pass returning float32 logits [T, vocab] (and taking a trace hook)."""

    config: Any

    def new_cache(self) -> Any: ...
    def forward(
        self, token_ids: Any, cache: Any, position_ids: Any = None, trace: Any = None
    ) -> Any: ...


@dataclass(frozen=True)
class Refusal:
    """The typed error a recognised but unimplemented family raises when it is used."""

    rule: str
    detail: str
    path: str

    def error(self) -> UnsupportedError:
        return UnsupportedError(self.rule, self.detail, path=self.path)


@dataclass(frozen=True)
class Family:
    """One registry row. Code references are "module:attribute" strings:

    binder     source -> (config, weights); container hooks as keywords (VQF: matrix_words,
               .ninfer: codec_for, the (format, layout) -> codec lookup)
    reference  (config, weights) -> the reference model
    fast       (source, threads=n) -> a model whose weights stay in the open file; None: no
               fast forward pass (engine fast runs the reference)
    trace      config -> every trace name of a forward pass, in recording order
    """

    name: str
    container: str
    architectures: tuple[str, ...]
    binder: str | None = None
    reference: str | None = None
    fast: str | None = None
    trace: str | None = None
    refusal: Refusal | None = None

    def code(self, field: str) -> Any:
        """The object a code field names, imported on first use."""
        ref = getattr(self, field)
        if ref is None:
            raise RuntimeError(f"family {self.name} has no {field}")
        return resolve(ref)

    def preload(self) -> None:
        """Import every module the row names (code, not model data)."""
        for field in ("binder", "reference", "fast", "trace"):
            if getattr(self, field) is not None:
                self.code(field)

    def require_supported(self) -> None:
        """Raise the row's refusal (an UnsupportedError) if the family is not implemented."""
        if self.refusal is not None:
            raise self.refusal.error()

    @property
    def has_fast(self) -> bool:
        """True when the family has a fast forward pass (the C kernels aside)."""
        return self.refusal is None and self.fast is not None

    def bind(self, source: Any, **hooks: Any) -> tuple[Any, Any]:
        """(config, weights) of an open file, by the family's reference binder."""
        self.require_supported()
        return self.code("binder")(source, **hooks)

    def reference_model(self, source: Any, **hooks: Any) -> Model:
        """The reference model of an open file (the weights are decoded; the file may close)."""
        config, weights = self.bind(source, **hooks)
        return self.code("reference")(config, weights)

    def fast_model(self, source: Any, threads: int = 1) -> Model:
        """The fast model of an open file (keep the file open while it is used)."""
        self.require_supported()
        return self.code("fast")(source, threads=threads)

    def trace_names(self, config: Any) -> list[str]:
        """Every name a forward pass of a model with this config records, in order."""
        self.require_supported()
        return self.code("trace")(config)


#: The registry: one row per family.
ROWS: tuple[Family, ...] = (
    Family(
        name="qwen3",
        container=VQF,
        architectures=(QWEN3,),
        binder="weightfile.ref.qwen3.bind_vqf:bind_vqf",
        reference="weightfile.ref.qwen3.decoder:Qwen3Model",
        fast="weightfile.fast.qwen3:open_model",
        trace="weightfile.ref.qwen3.trace:names_for",
    ),
    Family(
        name="qwen3_vl",
        container=VQF,
        architectures=(QWEN3_VL,),
        binder="weightfile.ref.qwen3_vl.bind_vqf:bind_family",
        reference="weightfile.ref.qwen3_vl.model:reference_model",
        fast="weightfile.fast.qwen3_vl:open_model",
        trace="weightfile.ref.qwen3_vl.trace:names_for",
    ),
    Family(
        name="qwen3_moe",
        container=VQF,
        architectures=(QWEN3_MOE,),
        binder="weightfile.ref.qwen3_moe.bind_vqf:bind_vqf",
        reference="weightfile.ref.qwen3_moe.decoder:Qwen3MoeModel",
        fast="weightfile.fast.qwen3_moe:open_model",
        trace="weightfile.ref.qwen3_moe.trace:names_for",
    ),
    Family(
        name="qwen35",
        container=NINFER,
        architectures=(DENSE_ARCHITECTURE, MOE_ARCHITECTURE),
        binder="weightfile.ref.qwen35.bind:bind_ninfer",
        reference="weightfile.ref.qwen35.model:Qwen35Model",
        trace="weightfile.ref.qwen35.trace:names_for",
    ),
)


def resolve(ref: str) -> Any:
    """The attribute a "module:attribute" reference names."""
    module, _, attribute = ref.partition(":")
    return getattr(import_module(module), attribute)


@cache
def index() -> dict[tuple[str, str], Family]:
    """(container, architecture) -> row; each key claimed by exactly one row."""
    keys: dict[tuple[str, str], Family] = {}
    for row in ROWS:
        for arch in row.architectures:
            if (row.container, arch) in keys:
                raise RuntimeError(f"{row.container}/{arch} is claimed twice in the registry")
            keys[(row.container, arch)] = row
    return keys


def unknown(container: str, architecture: str) -> WeightfileError:
    """The typed error for an architecture no row claims: VQF reports it as unsupported; for
    `.ninfer` the architecture set is closed (spec/ninfer3.md §6.1): an unknown one is invalid."""
    if container == VQF:
        return UnsupportedError(
            "vqf.bind.unsupported", f"no model family for {architecture!r}", path="header"
        )
    if container == NINFER:
        return InvalidError(
            "ninfer3.text.architecture",
            f"unknown architectures {[architecture]!r:.80}",
            path=f"components.{TEXT_COMPONENT}.config.architectures",
        )
    raise ValueError(f"unknown container {container!r}")


def lookup(container: str, architecture: str) -> Family:
    """The row serving `architecture` in `container`, or the typed error of `unknown`."""
    row = index().get((container, architecture))
    if row is None:
        raise unknown(container, architecture)
    return row


def vqf_architecture(version: int, flags: int) -> str:
    """is_moe = version 3 or the MOE flag (spec/vqf.md §2.5, §9 step 11); else flag VISION is
    Qwen3-VL (spec/vqf.md §7.4); else the dense decoder."""
    if version == 3 or flags & VQFFlag.MOE:
        return QWEN3_MOE
    return QWEN3_VL if flags & VQFFlag.VISION else QWEN3


def vqf_family(vqf: VQFFile) -> Family:
    """The row of an open VQF file, from its header's version and flags."""
    return lookup(VQF, vqf_architecture(vqf.header.version, vqf.header.flags))


def text_architecture(config: Any) -> str | None:
    """The architecture a `.ninfer` text config names (a one-element list of a string), or None
    when it names none in that shape (spec/ninfer3.md §6.1)."""
    arch = config.get("architectures") if isinstance(config, Mapping) else None
    if type(arch) is list and len(arch) == 1 and isinstance(arch[0], str):
        return arch[0]
    return None


def ninfer_family(nf: Artifact) -> Family:
    """The row of an open `.ninfer` file, from its text component's config.

    The component lookup raises the binder's own error when the file has no text component. A
    config naming no architecture a row claims goes through the text-config validation
    (spec/ninfer3.md §6.1) first, so the file is rejected with the same rule (and path) the
    binder's first step would report."""
    config = nf.component(TEXT_COMPONENT).config
    arch = text_architecture(config)
    if arch is None or (NINFER, arch) not in index():
        from weightfile.ref.qwen35.config import validate_text_config

        validate_text_config(config)
        if arch is None:  # validation accepts only a known one-element list: our bug
            raise RuntimeError("a valid text config without an architecture")
    return lookup(NINFER, arch)
