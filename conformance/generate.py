"""The deterministic generator of the conformance corpus (conformance/README.md, "Regenerating").

Each case source yields its cases already checked against the reference: the format-level ones
here (vqf_cases, ninfer3_cases, codec_cases, protected_cases), then every model family's
conformance builders, taken from its row of the family registry (weightfile/families/registry.py,
`Family.builders`). The generator adds the common case.json fields, the manifests and VERSION,
and re-checks every spec number (spec_numbers) and every value an outside library can compute
(crosscheck) before anything is written. Nothing depends on the clock, the machine or a random
seed other than the fixed ones, so regenerating gives identical bytes.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from weightfile.families import builders, resolve

from . import (
    codec_cases,
    crosscheck,
    encode_failures,
    ninfer3_cases,
    protected_cases,
    spec_numbers,
    vqf_cases,
)
from .case_types import Case

#: Bump when a case's bytes or JSON change; recorded in every case.json and in VERSION.
GENERATOR_VERSION = "5"
CORPUS_VERSION = "v1"  # the VQF corpus
#: The VQF cases that need keys (the `vqf-protected` kind, README "Protected cases"): a corpus
#: version of their own beside v1, run together with it (CHANGELOG.md).
PROTECTED_VERSION = "v2"
NINFER3_VERSION = "v1"
#: The kestrel-board profile's model cases (the `vqf-board-model` kind, spec/numerics.md §board)
#: and the Qwen3-MoE model cases (`vqf-moe-model`, spec/models.md §qwen3-moe-vqf-v3).
BOARD_VERSION = "v3"
#: The .ninfer Qwen3.5 model cases with a tokenizer the installed `tokenizers` accepts, beside
#: v1 (whose files stay as published) and run with it (CHANGELOG.md, "ninfer3 v2").
NINFER3_MODEL_VERSION = "v2"
#: The Qwen3-VL model cases (`vqf-vl-model`, spec/models.md §qwen3-vl): images, DeepStack, MRoPE.
VL_VERSION = "v4"
#: Codec cases whose encoding must fail (README "Encoding that must fail"), and, for VQF, model
#: cases decoded by seeded sampling with a temperature (spec/numerics.md §next-token).
VQF_V5 = "v5"
NINFER3_V3 = "v3"
#: The Qwen3.5 vision model cases (`ninfer3-vl-model`), CHANGELOG.md "ninfer3 v4".
NINFER3_VL_VERSION = "v4"
#: The rejected Qwen3.5 vision files (`ninfer3-vl-model`, expect reject), CHANGELOG.md "ninfer3 v5".
NINFER3_VL_REJECT_VERSION = "v5"
#: The kestrel-board profile's vision tower cases (`vqf-board-vl-model`), CHANGELOG.md "vqf v6".
VQF_V6 = "v6"
#: The Qwen3.5 MTP speculative-decoding cases (`ninfer3-mtp-model`), CHANGELOG.md "ninfer3 v6".
NINFER3_MTP_VERSION = "v6"
#: The rejected Qwen3.5 MTP files (`ninfer3-mtp-model`, expect reject), CHANGELOG.md "ninfer3 v7".
NINFER3_MTP_REJECT_VERSION = "v7"
#: The kestrel-board profile's Qwen3-MoE cases (`vqf-board-moe-model`), CHANGELOG.md "vqf v7".
VQF_V7 = "v7"
#: Every corpus version, in the order VERSION lists them (the order they were published); a
#: family's builder names one of these (weightfile/families/registry.py).
VERSIONS: tuple[tuple[str, str], ...] = (
    ("vqf", CORPUS_VERSION),
    ("ninfer3", NINFER3_VERSION),
    ("vqf", PROTECTED_VERSION),
    ("vqf", BOARD_VERSION),
    ("ninfer3", NINFER3_MODEL_VERSION),
    ("vqf", VL_VERSION),
    ("vqf", VQF_V5),
    ("ninfer3", NINFER3_V3),
    ("ninfer3", NINFER3_VL_VERSION),
    ("ninfer3", NINFER3_VL_REJECT_VERSION),
    ("vqf", VQF_V6),
    ("ninfer3", NINFER3_MTP_VERSION),
    ("ninfer3", NINFER3_MTP_REJECT_VERSION),
    ("vqf", VQF_V7),
)
CORPUS_DIR = Path(__file__).with_name("corpus")


def _json(obj: Any) -> bytes:
    return (json.dumps(obj, indent=2, ensure_ascii=True) + "\n").encode()


Source = Callable[[Path, str], Iterator[Case]]

#: The format-level sources: (format, corpus version, kind, case source) in manifest order.
FORMAT_SOURCES: tuple[tuple[str, str, str, Source], ...] = (
    ("vqf", CORPUS_VERSION, "container", vqf_cases.valid_cases),
    ("vqf", CORPUS_VERSION, "container", vqf_cases.invalid_cases),
    ("ninfer3", NINFER3_VERSION, "container", ninfer3_cases.valid_cases),
    ("ninfer3", NINFER3_VERSION, "container", ninfer3_cases.invalid_cases),
    ("vqf", CORPUS_VERSION, "codec", lambda _, prefix: codec_cases.corpus_cases("vqf", prefix)),
    ("ninfer3", NINFER3_VERSION, "codec",
     lambda _, prefix: codec_cases.corpus_cases("ninfer3", prefix)),
    ("vqf", PROTECTED_VERSION, "protected", protected_cases.valid_cases),
    ("vqf", PROTECTED_VERSION, "protected", protected_cases.invalid_cases),
    ("vqf", VQF_V5, "codec", lambda _, prefix: encode_failures.corpus_cases("vqf", prefix)),
    ("ninfer3", NINFER3_V3, "codec",
     lambda _, prefix: encode_failures.corpus_cases("ninfer3", prefix)),
)  # fmt: skip


def sources() -> tuple[tuple[str, str, str, Source], ...]:
    """Every case source in manifest order: the format-level ones, then each family row's
    builders in row order (imported here, on first use). Within one manifest that is the
    published order: a format's container and codec cases precede its model cases, and each
    corpus version after v1 holds one family's cases or follows the rows' order."""
    family = tuple((b.format, b.version, b.kind, resolve(b.source)) for b in builders())
    for fmt, version, kind, _ in family:
        if (fmt, version) not in VERSIONS:
            raise RuntimeError(f"a {kind} builder names an unknown corpus {fmt} {version}")
    return FORMAT_SOURCES + family


def corpus_files() -> dict[str, bytes]:
    """Every file of the corpus, by path relative to the corpus directory."""
    files: dict[str, bytes] = {}
    manifests: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n, (fmt, version, kind, source) in enumerate(sources()):
            scratch = Path(tmp) / str(n)
            scratch.mkdir()
            for cid, fields, parts, want in source(scratch, f"{fmt}/{version}"):
                manifests.setdefault(f"files-{fmt}-{version}", []).append(cid)
                meta = {"id": cid, "format": fmt, "kind": kind, **fields,
                        "generator": GENERATOR_VERSION}  # fmt: skip
                files[f"{cid}/case.json"] = _json(meta)
                if want is not None:
                    files[f"{cid}/want.json"] = _json(want)
                for name, blob in parts.items():
                    files[f"{cid}/{name}"] = blob
    problems = spec_numbers.check_all(files)
    if problems:
        raise RuntimeError("the corpus disagrees with the spec: " + "; ".join(problems))
    problems = crosscheck.check_all(files)
    if problems:
        raise RuntimeError("the corpus disagrees with an outside oracle: " + "; ".join(problems))
    for name, ids in manifests.items():
        files[name] = "".join(f"{cid}\n" for cid in ids).encode()
    lines = [f"{fmt} {version}" for fmt, version in VERSIONS]
    files["VERSION"] = "\n".join([*lines, f"generator {GENERATOR_VERSION}", ""]).encode()
    return files


def write_corpus(root: Path = CORPUS_DIR) -> int:
    """Replace the corpus under `root` with freshly generated files; return how many. Each file
    is published by the one output policy (ref/staging.py `write_output`, spec/ninfer3.md
    §safe-files): staged beside it, renamed into place, never through a symlink."""
    from weightfile.ref.staging import write_output

    files = corpus_files()
    if root.exists():
        shutil.rmtree(root)
    for rel, blob in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        write_output(target, blob, overwrite=False)
    return len(files)


def drift(root: Path = CORPUS_DIR) -> list[str]:
    """Paths where the committed corpus differs from a fresh generation (empty: no drift)."""
    files = corpus_files()
    on_disk = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
    problems = [f"missing {rel}" for rel in sorted(set(files) - on_disk)]
    problems += [f"unexpected {rel}" for rel in sorted(on_disk - set(files))]
    problems += [
        f"differs {rel}"
        for rel in sorted(set(files) & on_disk)
        if (root / rel).read_bytes() != files[rel]
    ]
    return problems
