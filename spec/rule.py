"""The one `Rule` type of the rule tables and the helper that keys rows by id (spec/README.md).

A rule row says which error class a rule raises, which layer raises it (`origin`), where the
specification states it (`doc` and `section`, a heading of `spec/<doc>.md`, plus `step` when the
rule is one numbered step of a procedure, e.g. spec/vqf.md §loader-chain step 12) and what it means.

This module sits below every per-area table (spec/vqf/rules.py, spec/ninfer3/rules.py and the
shared rows of spec/rules.py), so the areas import the type from here and spec/rules.py imports the
areas to merge them: the imports point one way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from weightfile.spec.errors import ERROR_CLASSES

#: Every rule id starts with one of these (the first dotted segment).
PREFIXES = ("vqf", "ninfer3", "qwen35", "format", "frontend", "bench", "demo", "native")

#: The in-tree documents a section can point into (spec/<doc>.md).
DOCS = ("vqf", "ninfer3", "numerics", "models")

#: Which layer raises the rule.
ORIGINS = (
    "loader",  # the Kestrel loader chain, spec/vqf.md §loader-chain
    "strict",  # the strict checks the engine does not make, spec/vqf.md §strict-checks
    "feature",  # a registered feature not implemented yet
    "protected",  # ENC/SIGNED checks that need a passphrase or trusted key (spec/vqf.md §protected)
    "container",  # .ninfer framing and directory validation
    "reader",  # lookups and range reads by callers
    "deferred",  # .ninfer checks made when an object is used
    "binder",  # binding a file to a model family
    "codec",  # tensor payload encode/decode
    "importer",  # converting a Hugging Face checkpoint
    "writer",  # writer inputs
    "frontend",  # tokenizer, prompt and chat template of run/trace
    "cli",  # command-line usage that raises one of our errors
    "defect",  # a board-engine defect a valid file's geometry triggers: reported, never raised
)

ID = re.compile(r"[a-z][a-z0-9_]*(\.([a-z0-9_]+|\*))+")
# A heading of spec/<doc>.md: its id ("§board"), or, for the VQF and .ninfer rules, the
# fact-sheet number the corpus publishes ("§9.1", "§5.6-§5.8"; conformance/sections.py).
SECTION = re.compile(r"§(?:[a-z][a-z0-9-]*|\d+(\.\d+)*(-§\d+(\.\d+)*)?)")
# The document a rule's id implies when its row names none.
_DOC_OF_PREFIX = {"vqf": "vqf", "ninfer3": "ninfer3", "qwen35": "ninfer3"}


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule: id, error class, layer, where it is specified and what it means."""

    id: str  # dotted, lowercase; `*` in a codec family row stands for one codec name
    error_class: str  # a name of spec.errors.ERROR_CLASSES
    origin: str  # one of ORIGINS
    # a heading of spec/<doc>.md: "spec/vqf.md §9", "spec/vqf.md §2.4", "spec/vqf.md §9.1",
    # "spec/vqf.md §5.6-§5.8"
    section: str
    meaning: str
    step: int | None = None  # the numbered step of the procedure under `section`
    doc: str = ""  # vqf | ninfer3 | numerics | models; derived from the id prefix when empty
    untested: str = ""  # why no test can raise this rule; empty when a test does
    retired: str = ""  # the rule that reports the same input now; a retired rule is never raised

    def __post_init__(self) -> None:
        if not self.doc:
            object.__setattr__(self, "doc", _DOC_OF_PREFIX.get(self.id.split(".")[0], ""))
        assert ID.fullmatch(self.id) and self.id.split(".")[0] in PREFIXES, self.id
        assert self.error_class in ERROR_CLASSES, (self.id, self.error_class)
        assert self.origin in ORIGINS, (self.id, self.origin)
        assert self.doc in DOCS, (self.id, self.doc)
        assert SECTION.fullmatch(self.section), (self.id, self.section)

    @property
    def where(self) -> str:
        """The citation in the project's one form, e.g. ``spec/vqf.md §loader-chain step 12``."""
        step = f" step {self.step}" if self.step is not None else ""
        return f"spec/{self.doc}.md {self.section}{step}"

    def matches(self, rule_id: str) -> bool:
        """True when `rule_id` is this row's id, or one member of this codec family."""
        if "*" not in self.id:
            return rule_id == self.id
        return re.fullmatch(re.escape(self.id).replace(r"\*", r"[a-z0-9_]+"), rule_id) is not None


def table(rows: Iterable[Rule]) -> dict[str, Rule]:
    """The rows keyed by id; a duplicate id is our own bug."""
    out: dict[str, Rule] = {}
    for r in rows:
        assert r.id not in out, f"duplicate rule id {r.id}"
        out[r.id] = r
    return out


#: The error classes of the rows, in short (spec/errors.py): every table writes a row as
#: Rule(id, CLASS, origin, section, meaning, step=..., doc=..., untested=..., retired=...).
MAL, INV, UNS = "MalformedError", "InvalidError", "UnsupportedError"
NOT_FOUND, CHECKSUM, CLOSED = "NotFoundError", "ChecksumError", "ClosedError"
EXISTS = "DestinationExistsError"
