"""The deterministic generator of the VQF container corpus (conformance/README.md, "Corpus").

Valid cases are written by the reference writer from seeded tiny models; invalid cases are the
mutation table (vqf_mutations.CASES), one per file rule. Before a case is written the generator
checks it with the reference validator: a valid case must have no violation and an invalid case
must break exactly the rules it names. Nothing depends on the clock, the machine or a random seed
other than the fixed ones below, so regenerating gives identical bytes.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from weightfile.examples import tiny_tensors
from weightfile.ref.vqf.read import open_vqf
from weightfile.ref.vqf.validate import validate
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.qtypes import QType
from weightfile.spec.vqf.rules import RULES

from . import codec_cases, model_cases, ninfer3_cases, spec_numbers
from .vqf_describe import describe_vqf
from .vqf_mutations import CASES, RULE_ARCH, write_base

#: Bump when a case's bytes or JSON change; recorded in every case.json and in VERSION.
GENERATOR_VERSION = "2"
CORPUS_VERSION = "v1"  # the VQF corpus
NINFER3_VERSION = "v1"
CORPUS_DIR = Path(__file__).with_name("corpus")
TILED = VQFFlag.Q8_8X8 | VQFFlag.Q4_4X4
MOE_ARCH: dict[str, Any] = {**RULE_ARCH, "n_experts": 2, "moe_ffn": 32, "top_k": 1}


@dataclass(frozen=True, slots=True)
class ValidCase:
    topic: str
    name: str
    meaning: str
    write: Callable[[Path], Path]


def _writer(arch: dict[str, Any], wmode: str, flags: int, **kw: Any) -> Callable[[Path], Path]:
    embed = QType.F16 if flags & VQFFlag.EMB_F16 else QType.F32
    tensors = tiny_tensors(arch, wmode, seed=7, embed=embed)
    return lambda p: write_base(p, arch=arch, tensors=tensors, flags=flags, **kw)


VALID = (
    ValidCase("current", "v2-q4-tiled", "wmode q4, Q8_8X8|Q4_4X4|EMB_F16",
              _writer(RULE_ARCH, "q4", TILED | VQFFlag.EMB_F16)),
    ValidCase("current", "v2-q8-plain", "wmode q8, untiled, F16 embedding",
              _writer(RULE_ARCH, "q8", VQFFlag.EMB_F16)),
    ValidCase("current", "v2-dual-tiled", "wmode dual: q8_* and q4_* matrices, tiled",
              _writer(RULE_ARCH, "dual", TILED | VQFFlag.EMB_F16)),
    ValidCase("current", "v2-q4-f32-embed", "no flags: untiled q4, F32 embedding",
              _writer(RULE_ARCH, "q4", 0)),
    ValidCase("current", "v3-moe-q4", "version 3 MoE with a router, MOE flag",
              _writer(MOE_ARCH, "q4", TILED | VQFFlag.EMB_F16 | VQFFlag.MOE, version=3)),
    ValidCase("legacy", "v2-q4-tiled", "the legacy 432-byte header layout (§2.4)",
              _writer(RULE_ARCH, "q4", TILED | VQFFlag.EMB_F16, layout="legacy")),
)  # fmt: skip


def _json(obj: Any) -> bytes:
    return (json.dumps(obj, indent=2, ensure_ascii=True) + "\n").encode()


#: (case id, case.json fields beyond the common ones, input files, want.json or None)
Case = tuple[str, dict[str, Any], dict[str, bytes], Any]


def vqf_valid_cases(scratch: Path, prefix: str) -> Iterator[Case]:
    """Every valid VQF case."""
    for case in VALID:
        path = case.write(scratch / f"{case.topic}-{case.name}.vqf")
        found = validate(path, checksum=True)
        if found:
            raise RuntimeError(f"valid case {case.name} is invalid: {[str(v) for v in found]}")
        with open_vqf(path) as vqf:
            want = describe_vqf(vqf)
        meta = {"expect": "accept", "input": "input.vqf", "description": case.meaning}
        yield (
            f"{prefix}/valid/{case.topic}/{case.name}",
            meta,
            {"input.vqf": path.read_bytes()},
            want,
        )


def vqf_invalid_cases(scratch: Path, prefix: str) -> Iterator[Case]:
    """One invalid case per VQF file rule."""
    for rule_id in sorted(CASES):
        mutate, broken = CASES[rule_id]
        path = write_base(scratch / f"{rule_id}.vqf")
        mutate(path)
        expected = broken or {rule_id}
        found = {v.rule for v in validate(path, checksum=True)}
        if found != expected:
            raise RuntimeError(f"case {rule_id} breaks {sorted(found)}, not {sorted(expected)}")
        rule = RULES[rule_id]
        _, topic, name = rule_id.split(".")
        accepted = [{"rule": r, "error_class": RULES[r].error_class} for r in sorted(expected)]
        meta = {"expect": "reject", "input": "input.vqf", "rule": rule_id,
                "error_class": rule.error_class, "accepted": accepted, "origin": rule.origin,
                "section": rule.section, "description": rule.meaning}  # fmt: skip
        yield f"{prefix}/invalid/{topic}/{name}", meta, {"input.vqf": path.read_bytes()}, None


#: (format, corpus version, kind, case source) in manifest order.
SOURCES: tuple[tuple[str, str, str, Callable[[Path, str], Iterator[Case]]], ...] = (
    ("vqf", CORPUS_VERSION, "container", vqf_valid_cases),
    ("vqf", CORPUS_VERSION, "container", vqf_invalid_cases),
    ("ninfer3", NINFER3_VERSION, "container", ninfer3_cases.valid_cases),
    ("ninfer3", NINFER3_VERSION, "container", ninfer3_cases.invalid_cases),
    ("vqf", CORPUS_VERSION, "codec", lambda _, prefix: codec_cases.corpus_cases("vqf", prefix)),
    ("ninfer3", NINFER3_VERSION, "codec",
     lambda _, prefix: codec_cases.corpus_cases("ninfer3", prefix)),
    ("vqf", CORPUS_VERSION, "model", model_cases.corpus_cases),
)  # fmt: skip


def corpus_files() -> dict[str, bytes]:
    """Every file of the corpus, by path relative to the corpus directory."""
    files: dict[str, bytes] = {}
    manifests: dict[str, list[str]] = {}
    versions: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n, (fmt, version, kind, source) in enumerate(SOURCES):
            scratch = Path(tmp) / str(n)
            scratch.mkdir()
            versions[fmt] = version
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
    for name, ids in manifests.items():
        files[name] = "".join(f"{cid}\n" for cid in ids).encode()
    lines = [f"{fmt} {version}" for fmt, version in versions.items()]
    files["VERSION"] = "\n".join([*lines, f"generator {GENERATOR_VERSION}", ""]).encode()
    return files


def write_corpus(root: Path = CORPUS_DIR) -> int:
    """Replace the corpus under `root` with freshly generated files; return how many."""
    files = corpus_files()
    if root.exists():
        shutil.rmtree(root)
    for rel, blob in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(blob)
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
