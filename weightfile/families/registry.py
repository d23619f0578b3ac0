"""The family registry: one row per model family (issues 12, 27; spec/vqf.md §flags, §loader-chain;
spec/ninfer3.md §qwen35-config).

A row says, for one family, everything the rest of the library asks about it:
* reading: which (container, architecture) pairs it serves, its reference binder, reference model,
  fast model (or None), trace-name table and, where another row's models run its text-only
  workloads, that row (`text_family`). `weightfile run` / `trace` (weightfile/frontend), `bench`
  (weightfile/bench/engines.py) and the conformance adapters ask this module and nothing else
  which family a file is and how to load it;
* writing: its importers by (source kind, target kind), from which the convert dispatch table
  (weightfile/convert/dispatch.py, `CONVERTERS`) is derived;
* its synthetic bench presets, from which `weightfile.bench.synthetic.SPECS` is derived;
* its conformance builders (format, corpus version, kind, case source, answer), from which the
  corpus generator's model cases (conformance/generate.py, `sources`) and the built-in adapter's
  model kinds, their answers, notes and skips (conformance/adapter.py) are derived.
Numerics profiles are not in the row: they are their own registry, keyed by family name.

The architecture is what the container says:
* VQF stores no architecture string; the header's version and flags decide (`vqf_architecture`):
  version 3 or the MOE flag is Qwen3-MoE, else flag VISION is Qwen3-VL (the vision tower on the
  dense decoder, ref/qwen3_vl), anything else the dense Qwen3 text decoder.
* `.ninfer` names it in the text component's config (`architectures`, a one-element list,
  spec/ninfer3.md §qwen35-config).

A row names its code as "module:attribute" strings, imported on first use, so that opening a VQF
never imports the `.ninfer` families (nor a converter) and the other way round;
tests/test_families.py resolves every row. A family that is recognised but not implemented has a
`refusal` instead: using it raises that typed error.

Adding a family is one folder plus one row:
* the model, in the oracle and (optionally) the fast path: `ref/<family>/` with config, weights,
  binder (source -> (config, weights)), model (built from the family-neutral
  `weightfile.ref.layers`) and `trace.py` (`names_for(config)`, the trace-name table its blocks
  record through `layers.trace.emit`); `fast/<family>/` with `open_model(source, *, threads)`,
  bit for bit the reference;
* everything API-side in `weightfile/families/<family>/`: its converters (`to_vqf.py`,
  `to_ninfer.py`, `from_gguf.py`, and `importers.py`, the (src, dst, ConvertOptions) entry points
  the dispatch runs), its Hugging Face name maps and config readers (`hf_names.py`, `hf.py`), its
  synthetic bench presets (`presets.py`) and its conformance case builders (`conformance.py`);
* one `Family` row in `ROWS` below naming them (for Qwen3-MoE: replace the row's refusal).
tests/test_families.py then checks the row resolves, its architectures look it up, its importers
are in the convert dispatch, its presets build, its builders are in the corpus generator and
their kinds are the ones the built-in adapter answers. Outside the folder and the row: a new VQF
family needs the header version or flag that tells it apart (`vqf_architecture`, a spec/vqf.md
change), and cases in a new corpus version need that version published (conformance/generate.py
`VERSIONS`, conformance/CHANGELOG.md, conformance/README.md).
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
from weightfile.spec.numerics.profile import CANONICAL, KESTREL_BOARD
from weightfile.spec.vqf.flags import VQFFlag

if TYPE_CHECKING:
    from weightfile.ref.ninfer3.read import Artifact
    from weightfile.ref.vqf.read import VQFFile

#: Container names, as `weightfile.formats.sniff` spells them.
VQF = "vqf"
NINFER = "ninfer"
HF = "hf"  # a Hugging Face checkpoint folder: a destination without an extension

#: The architectures a VQF header can say (spec/vqf.md §header-layout, §flags: version 2 or 3, flag
#: MOE).
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
class Importer:
    """A converter a family offers the convert dispatch (weightfile/convert/dispatch.py).

    source     the source kind: `hf/<model_type>` (`hf/*`: any folder no row names by its
               model_type), `gguf/<general.architecture>`, or a container name
    target     the target kind: the destination's extension without the dot
    converter  "module:function" taking (src, dst, ConvertOptions) -> the published paths
    """

    source: str
    target: str
    converter: str


@dataclass(frozen=True)
class Builder:
    """A conformance case source of the corpus generator (conformance/generate.py), and how the
    built-in adapter (conformance/adapter.py) answers its case kind.

    format, version  the corpus it writes into (`conformance/corpus/<format>/<version>/`)
    kind             the case.json `kind`; the adapter's case kind is `<format>-<kind>`
    source           "module:function" taking (scratch folder, id prefix) -> an iterator of Case
    answer           "module:function" taking (Backend, case folder) -> the answer (a dict, printed
                     as JSON) or the Violation of a file the family rejects (conformance/README.md,
                     "Protocol"); every builder of one case kind names the same one
    numerics         the case.json `numerics`: under `canonical` engine fast answers with the
                     row's fast model (which needs the C kernels), or, in a row without one, with
                     the reference and `note`; under another profile the answer binds that
                     profile's models itself (weightfile/profiles.py)
    note             "module:attribute" of the text the adapter's `kinds` reply notes for the kind
                     when engine fast answers it with the reference forward pass
    """

    format: str
    version: str
    kind: str
    source: str
    answer: str
    numerics: str = CANONICAL.name
    note: str | None = None


@dataclass(frozen=True)
class Family:
    """One registry row. Code references are "module:attribute" strings:

    binder     source -> (config, weights); container hooks as keywords (VQF: matrix_words,
               .ninfer: codec_for, the (format, layout) -> codec lookup)
    reference  (config, weights) -> the reference model
    fast       (source, threads=n) -> a model whose weights stay in the open file; None: no
               fast forward pass (engine fast runs the reference)
    trace      config -> every trace name of a forward pass, in recording order
    importers  the converters writing this family, by (source kind, target kind)
    presets    a tuple of `weightfile.bench.synthetic_spec.SyntheticSpec`: the synthetic models
               `weightfile bench` can generate, in listing order
    builders   the conformance case sources, in the corpus manifests' order
    text_family  the name of the row whose models run this family's text-only workloads (the
               bench's pp/tg tests, weightfile/bench/engines.py); None: its own models
    """

    name: str
    container: str
    architectures: tuple[str, ...]
    binder: str | None = None
    reference: str | None = None
    fast: str | None = None
    trace: str | None = None
    refusal: Refusal | None = None
    importers: tuple[Importer, ...] = ()
    presets: str | None = None
    builders: tuple[Builder, ...] = ()
    text_family: str | None = None

    def code(self, field: str) -> Any:
        """The object a code field names, imported on first use."""
        ref = getattr(self, field)
        if ref is None:
            raise RuntimeError(f"family {self.name} has no {field}")
        return resolve(ref)

    def preload(self) -> None:
        """Import every module the reading fields name (code, not model data)."""
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
        importers=(
            Importer("hf/qwen3", VQF, "weightfile.families.qwen3.importers:hf_to_vqf"),
            # a folder no row names by its model_type: the Qwen3 importer reports its config
            Importer("hf/*", VQF, "weightfile.families.qwen3.importers:hf_to_vqf"),
            Importer("gguf/qwen3", VQF, "weightfile.families.qwen3.importers:gguf_to_vqf"),
            Importer("vqf", VQF, "weightfile.families.qwen3.importers:vqf_to_vqf"),
            Importer("vqf", HF, "weightfile.families.qwen3.importers:vqf_to_hf"),
        ),
        presets="weightfile.families.qwen3.presets:PRESETS",
        builders=(
            Builder(
                "vqf",
                "v1",
                "model",
                source="weightfile.families.qwen3.conformance:corpus_cases",
                answer="weightfile.families.qwen3.conformance:case_answer",
            ),
            # the kestrel-board profile's model cases (spec/numerics.md §board)
            Builder(
                "vqf",
                "v3",
                "board-model",
                source="weightfile.families.qwen3.board_conformance:corpus_cases",
                answer="weightfile.families.qwen3.board_conformance:case_answer",
                numerics=KESTREL_BOARD.name,
            ),
            # decoded by seeded sampling (spec/numerics.md §next-token)
            Builder(
                "vqf",
                "v5",
                "model",
                source="weightfile.families.qwen3.conformance:sampled_cases",
                answer="weightfile.families.qwen3.conformance:case_answer",
            ),
        ),
    ),
    Family(
        name="qwen3_vl",
        container=VQF,
        architectures=(QWEN3_VL,),
        binder="weightfile.ref.qwen3_vl.bind_vqf:bind_family",
        reference="weightfile.ref.qwen3_vl.model:reference_model",
        fast="weightfile.fast.qwen3_vl:open_model",
        trace="weightfile.ref.qwen3_vl.trace:names_for",
        importers=(
            Importer("hf/qwen3_vl", VQF, "weightfile.families.qwen3_vl.importers:hf_to_vqf"),
            # llama.cpp splits Qwen3-VL into a text and an mmproj (clip) GGUF: refused
            Importer("gguf/qwen3vl", VQF, "weightfile.families.qwen3_vl.importers:refuse_gguf"),
            Importer("gguf/clip", VQF, "weightfile.families.qwen3_vl.importers:refuse_gguf"),
        ),
        presets="weightfile.families.qwen3_vl.presets:PRESETS",
        # its text tower is the dense Qwen3 decoder block for block, and a prompt without images
        # sees MRoPE as RoPE (ref/qwen3_vl/model.py, spec/models.md §qwen3-vl): the dense row's
        # models run its text-only workloads
        text_family="qwen3",
        builders=(
            Builder(
                "vqf",
                "v4",
                "vl-model",
                source="weightfile.families.qwen3_vl.conformance:corpus_cases",
                answer="weightfile.families.qwen3_vl.conformance:case_answer",
                note="weightfile.families.qwen3_vl.conformance:FAST_VL_MODEL",
            ),
            # the kestrel-board profile's vision tower (spec/numerics.md §board-vision)
            Builder(
                "vqf",
                "v6",
                "board-vl-model",
                source="weightfile.families.qwen3_vl.board_conformance:corpus_cases",
                answer="weightfile.families.qwen3_vl.board_conformance:case_answer",
                numerics=KESTREL_BOARD.name,
            ),
        ),
    ),
    Family(
        name="qwen3_moe",
        container=VQF,
        architectures=(QWEN3_MOE,),
        binder="weightfile.ref.qwen3_moe.bind_vqf:bind_vqf",
        reference="weightfile.ref.qwen3_moe.decoder:Qwen3MoeModel",
        fast="weightfile.fast.qwen3_moe:open_model",
        trace="weightfile.ref.qwen3_moe.trace:names_for",
        importers=(
            Importer("hf/qwen3_moe", VQF, "weightfile.families.qwen3_moe.importers:hf_to_vqf"),
            Importer("gguf/qwen3moe", VQF, "weightfile.families.qwen3_moe.importers:gguf_to_vqf"),
        ),
        presets="weightfile.families.qwen3_moe.presets:PRESETS",
        builders=(
            Builder(
                "vqf",
                "v3",
                "moe-model",
                source="weightfile.families.qwen3_moe.conformance:corpus_cases",
                answer="weightfile.families.qwen3_moe.conformance:case_answer",
            ),
            # the kestrel-board MoE model (spec/numerics.md §board-moe-model) and its refusals
            Builder(
                "vqf",
                "v7",
                "board-moe-model",
                source="weightfile.families.qwen3_moe.board_conformance:corpus_cases",
                answer="weightfile.families.qwen3_moe.board_conformance:case_answer",
                numerics=KESTREL_BOARD.name,
            ),
        ),
    ),
    Family(
        name="qwen35",
        container=NINFER,
        architectures=(DENSE_ARCHITECTURE, MOE_ARCHITECTURE),
        binder="weightfile.ref.qwen35.bind:bind_ninfer",
        reference="weightfile.ref.qwen35.model:Qwen35Model",
        fast="weightfile.fast.qwen35:open_model",
        trace="weightfile.ref.qwen35.trace:names_for",
        # Qwen3.5 folders name model_types of their own: every folder without a row -> .ninfer
        importers=(
            Importer("hf/*", NINFER, "weightfile.families.qwen35.importers:hf_to_ninfer"),
            Importer("gguf/qwen35", NINFER, "weightfile.families.qwen35.importers:gguf_to_ninfer"),
            Importer(
                "gguf/qwen35moe", NINFER, "weightfile.families.qwen35.importers:gguf_to_ninfer"
            ),
            Importer("ninfer", "gguf", "weightfile.families.qwen35.importers:ninfer_to_gguf"),
        ),
        presets="weightfile.families.qwen35.presets:PRESETS",
        builders=(
            Builder(
                "ninfer3",
                "v1",
                "model",
                source="weightfile.families.qwen35.conformance:valid_cases",
                answer="weightfile.families.qwen35.conformance:case_answer",
            ),
            Builder(
                "ninfer3",
                "v1",
                "model",
                source="weightfile.families.qwen35.conformance:invalid_cases",
                answer="weightfile.families.qwen35.conformance:case_answer",
            ),
            # with a tokenizer the installed `tokenizers` accepts (CHANGELOG.md, "ninfer3 v2")
            Builder(
                "ninfer3",
                "v2",
                "model",
                source="weightfile.families.qwen35.conformance:valid_cases_v2",
                answer="weightfile.families.qwen35.conformance:case_answer",
            ),
            # ninfer3 v4: Qwen3.5 with its vision component (spec/models.md §qwen35-vision)
            Builder(
                "ninfer3",
                "v4",
                "vl-model",
                source="weightfile.families.qwen35.conformance_vl:corpus_cases",
                answer="weightfile.families.qwen35.conformance_vl:case_answer",
                note="weightfile.families.qwen35.conformance_vl:FAST_NINFER3_VL_MODEL",
            ),
            # ninfer3 v5: one rejected vision file per vision binder rule a file can break
            Builder(
                "ninfer3",
                "v5",
                "vl-model",
                source="weightfile.families.qwen35.conformance_vl_mutations:invalid_cases",
                answer="weightfile.families.qwen35.conformance_vl:case_answer",
                note="weightfile.families.qwen35.conformance_vl:FAST_NINFER3_VL_MODEL",
            ),
            # ninfer3 v6: speculative decoding with the mtp component (spec/models.md §qwen35-mtp)
            Builder(
                "ninfer3",
                "v6",
                "mtp-model",
                source="weightfile.families.qwen35.conformance_mtp:corpus_cases",
                answer="weightfile.families.qwen35.conformance_mtp:case_answer",
            ),
            # ninfer3 v7: one rejected MTP file per MTP / proposal binder rule a file can break
            Builder(
                "ninfer3",
                "v7",
                "mtp-model",
                source="weightfile.families.qwen35.conformance_mtp_mutations:invalid_cases",
                answer="weightfile.families.qwen35.conformance_mtp:case_answer",
            ),
        ),
    ),
)


def importers() -> dict[tuple[str, str], str]:
    """(source kind, target kind) -> "module:function" of every row's importers, in row order;
    each pair claimed by exactly one row."""
    table: dict[tuple[str, str], str] = {}
    for row in ROWS:
        for imp in row.importers:
            if (imp.source, imp.target) in table:
                raise RuntimeError(f"{imp.source} -> {imp.target} is claimed twice")
            table[(imp.source, imp.target)] = imp.converter
    return table


def builders() -> tuple[Builder, ...]:
    """Every row's conformance builders, in row order."""
    return tuple(b for row in ROWS for b in row.builders)


def presets() -> tuple[Any, ...]:
    """Every row's synthetic bench presets, in row order (imports the preset modules)."""
    return tuple(s for row in ROWS if row.presets is not None for s in row.code("presets"))


def named(name: str) -> Family:
    """The row called `name`."""
    for row in ROWS:
        if row.name == name:
            return row
    raise KeyError(f"no model family {name!r}")


def text_family_of(row: Family) -> Family:
    """The row whose models run `row`'s text-only workloads: its `text_family`, else itself."""
    return row if row.text_family is None else named(row.text_family)


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
    `.ninfer` the architecture set is closed (spec/ninfer3.md §qwen35-config): an unknown one is
    invalid."""
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
    """is_moe = version 3 or the MOE flag (spec/vqf.md §flags, §loader-chain step 11); else flag
    VISION is Qwen3-VL (spec/vqf.md §vision-tensors); else the dense decoder."""
    if version == 3 or flags & VQFFlag.MOE:
        return QWEN3_MOE
    return QWEN3_VL if flags & VQFFlag.VISION else QWEN3


def vqf_family(vqf: VQFFile) -> Family:
    """The row of an open VQF file, from its header's version and flags."""
    return lookup(VQF, vqf_architecture(vqf.header.version, vqf.header.flags))


def text_architecture(config: Any) -> str | None:
    """The architecture a `.ninfer` text config names (a one-element list of a string), or None
    when it names none in that shape (spec/ninfer3.md §qwen35-config)."""
    arch = config.get("architectures") if isinstance(config, Mapping) else None
    if type(arch) is list and len(arch) == 1 and isinstance(arch[0], str):
        return arch[0]
    return None


def ninfer_family(nf: Artifact) -> Family:
    """The row of an open `.ninfer` file, from its text component's config.

    The component lookup raises the binder's own error when the file has no text component. A
    config naming no architecture a row claims goes through the text-config validation
    (spec/ninfer3.md §qwen35-config) first, so the file is rejected with the same rule (and path)
    the binder's first step would report."""
    config = nf.component(TEXT_COMPONENT).config
    arch = text_architecture(config)
    if arch is None or (NINFER, arch) not in index():
        from weightfile.ref.qwen35.config import validate_text_config

        validate_text_config(config)
        if arch is None:  # validation accepts only a known one-element list: our bug
            raise RuntimeError("a valid text config without an architecture")
    return lookup(NINFER, arch)
