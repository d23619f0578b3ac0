"""The C adapter (conformance/adapters/c/conform.c), written from the README and the specs
alone, passes every case of the kinds and levels it declares when run through
`weightfile conformance run --impl`: no case fails, and any case it cannot answer is an
`unsupported` verdict, counted and listed here."""

from __future__ import annotations

import copy
import hashlib
import json
import random
import shutil
import struct
import subprocess

import numpy as np
import pytest

from weightfile.cli import main
from weightfile.conformance.adapter import answer
from weightfile.conformance.codec_cases import CodecCase, encode_payload, engine_codec
from weightfile.conformance.codec_cases import answer as codec_answer
from weightfile.conformance.generate import CORPUS_DIR
from weightfile.conformance.ninfer3_files import (
    sharded_doc,
    sharded_set,
    tiny_doc,
    tiny_set,
    write_set,
)
from weightfile.conformance.runner import case_ids, first_difference
from weightfile.ref.backend import REFERENCE
from weightfile.ref.vqf.fnv1a64 import fnv1a64
from weightfile.ref.vqf.read import open_vqf
from weightfile.ref.vqf.validate import validate as validate_vqf
from weightfile.spec.codecs.ninfer3.formats import FORMATS
from weightfile.spec.codecs.ninfer3.registry import CODECS as NINFER3_CODECS
from weightfile.spec.codecs.vqf.registry import CODECS as VQF_CODECS
from weightfile.spec.errors import WeightfileError

SOURCE = CORPUS_DIR.parent / "adapters" / "c" / "conform.c"
KINDS = ["vqf-container", "ninfer3-container", "vqf-codec", "ninfer3-codec"]
#: Claimed cases the adapter answers `unsupported` (README "Adapters" lists why); none today.
UNSUPPORTED: list[str] = []


@pytest.fixture(scope="module")
def adapter(tmp_path_factory: pytest.TempPathFactory) -> str:
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    exe = tmp_path_factory.mktemp("c") / "conform"
    flags = ["-O2", "-ffp-contract=off", "-std=c11", "-Wall", "-Wextra", "-Werror"]
    subprocess.run([cc, *flags, "-o", str(exe), str(SOURCE)], check=True)
    return str(exe)


def test_the_c_adapter_declares_its_kinds(adapter: str) -> None:
    out = subprocess.run([adapter, "kinds"], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == {
        "kinds": KINDS,
        "unsupported": {"vqf-protected": "no SM4, SM3 or SM2 in this adapter"},
    }


def in_level(case: dict) -> bool:
    """Every container and codec case (vqf/v2's are `protected`, a kind it does not claim)."""
    return case["kind"] in ("container", "codec")


def test_the_c_adapter_passes_every_case_it_claims(adapter: str, capsys) -> None:
    status = main(["conformance", "run", "--impl", adapter, "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert status == 0, [r for r in doc["results"] if not r["passed"] and not r["skipped"]]
    cases = [json.loads((CORPUS_DIR / c / "case.json").read_text()) for c in case_ids()]
    claimed = sorted(c["id"] for c in cases if in_level(c))
    assert doc["counts"]["fail"] == 0
    unsupported = sorted(r["case"] for r in doc["results"] if r["verdict"] == "unsupported")
    assert unsupported == UNSUPPORTED and doc["counts"]["unsupported"] == len(UNSUPPORTED)
    answered = sorted(set(claimed) - set(unsupported))
    assert doc["passed"] == len(answered) >= 110 + 57  # every container and codec case
    assert sorted(r["case"] for r in doc["results"] if r["passed"]) == answered
    codec = [r for r in doc["results"] if r["kind"].endswith("-codec")]
    assert len(codec) >= 57 and all(r["verdict"] == "pass" for r in codec)
    protected = [r for r in doc["results"] if r["case"].startswith("vqf/v2/")]
    assert len(protected) == 10 and all(r["skipped"] for r in protected)
    assert all("no SM4, SM3 or SM2" in r["reason"] for r in protected)


#: Values a directory mutation may write anywhere: every JSON type and the domain edges.
EDGE_VALUES = [None, True, 0, 1, -1, 2**64, 2**64 - 1, 1.5, 256.0, "", "x", "w.bf16", "r.hello",
               "text", [], [0], [1, 2], {}, {"object": "w.bf16"}, "A16Only", "\u0000", [0, 4],
               [2**63, 1]]  # fmt: skip


def _mutate(doc: dict, rng) -> None:
    """Replace, drop or add one member somewhere in the directory."""

    def places(node, prefix=()):
        yield prefix
        children = (
            node.items()
            if isinstance(node, dict)
            else enumerate(node)
            if isinstance(node, list)
            else ()
        )
        for k, v in children:
            yield from places(v, (*prefix, k))

    where = rng.choice(list(places(doc))[1:])
    parent = doc
    for k in where[:-1]:
        parent = parent[k]
    roll = rng.random()
    if roll < 0.6:
        parent[where[-1]] = copy.deepcopy(rng.choice(EDGE_VALUES))
    elif isinstance(parent, dict) and roll < 0.8:
        parent.pop(where[-1])
    elif isinstance(parent, dict):
        key = rng.choice(["extra", "id", "kind", "target", "proposal", "rows"])
        parent[key] = copy.deepcopy(rng.choice(EDGE_VALUES))
    else:
        parent.append(copy.deepcopy(parent[where[-1]]))


def test_the_c_adapter_agrees_with_the_reference_on_mutated_directories(adapter, tmp_path):
    """Beyond the corpus: seeded one- and two-fault directory edits of the spec/ninfer3.md
    §framing-numbers files give the same rule (or the same description) from C as from the
    reference."""

    def outcome(status: int, out: str, err: str) -> object:
        return (
            tuple(err.split(": ")[:2]) if status == 1 else json.loads(out) if status == 0 else err
        )

    rng = random.Random(11)
    seen = set()
    for i in range(150):
        folder = tmp_path / str(i)
        folder.mkdir()
        sharded = rng.random() < 0.3
        doc = sharded_doc() if sharded else tiny_doc()
        for _ in range(rng.randint(1, 2)):
            _mutate(doc, rng)
        if sharded:
            names = ("weights-second.bin", "optional.bin")
            write_set(folder, sharded_set(doc, sizes=(500, 780, 64), names=names))
        else:
            write_set(folder, tiny_set(doc, sizes=(265,), names=()))
        entry = str(folder / "model.ninfer")
        ref = answer("ninfer3-container", entry, "ref")
        c = subprocess.run([adapter, "ninfer3-container", entry], capture_output=True, text=True)
        want = outcome(ref.status, ref.stdout, ref.stderr)
        assert outcome(c.returncode, c.stdout, c.stderr) == want, json.dumps(doc)[:400]
        seen.add(want if isinstance(want, tuple) else "accept")
    assert len(seen) >= 15  # the edits reach many different rules


def run(adapter: str, kind: str, folder) -> subprocess.CompletedProcess:
    return subprocess.run([adapter, kind, str(folder)], capture_output=True, text=True)


def test_the_c_adapter_answers_unsupported_for_an_encoder_mode_it_lacks(adapter, tmp_path):
    """A declared kind with a case the adapter cannot answer: exit 3, 'unsupported: why'."""
    source = CORPUS_DIR / "vqf/v1/codec/q8_0/spec-6-6"
    shutil.copytree(source, tmp_path / "case")
    case = json.loads((tmp_path / "case" / "case.json").read_text())
    case["encoder"] = "ggml"  # a mode spec/vqf.md defines and the adapter does not implement
    (tmp_path / "case" / "case.json").write_text(json.dumps(case))
    c = run(adapter, "vqf-codec", tmp_path / "case")
    assert c.returncode == 3 and c.stdout == ""
    assert c.stderr.startswith("unsupported: ")


def _values(rng: random.Random, n: int) -> np.ndarray:
    """float32 inputs that reach the encoders' hard places: exact ties under a power-of-two
    scale, signed zeros, tiny and subnormal magnitudes, wide ranges, plain noise, and now and
    then a NaN or infinity."""
    style = rng.choice(["ties", "noise", "tiny", "wide", "zeros", "bf16-ties", "vanishing", "grid"])
    top, e = rng.choice([1, 7, 8, 15, 31, 127, 448]), 2.0 ** rng.randint(-6, 3)
    out = []
    for _ in range(n):
        if style == "ties":
            v = rng.randint(-300, 300) / 2 * 2.0 ** rng.randint(-8, 4)
        elif style == "tiny":
            v = rng.uniform(-1, 1) * 2.0 ** rng.randint(-149, -100)
        elif style == "grid":  # amax = qmax·2^e in every 32 lanes: scale 2^e, x/scale on ties
            v = (top if len(out) % 32 == 0 else rng.randint(-2 * top, 2 * top) / 2) * e
        elif style == "vanishing":  # below every scale: q8 floors, q4 overflows 1/d, fp8 fails
            v = rng.uniform(-1, 1) * 2.0**-128
        elif style == "wide":
            v = rng.uniform(-1, 1) * 2.0 ** rng.randint(-30, 15)
        elif style == "zeros":
            v = rng.choice([0.0, -0.0, 0.0, rng.uniform(-1e-3, 1e-3)])
        elif style == "bf16-ties":  # halfway between bf16 / fp16 / e4m3 neighbours
            v = (1 + (2 * rng.randint(0, 127) + 1) / 256) * 2.0 ** rng.randint(-10, 8)
            v = -v if rng.random() < 0.5 else v
        else:
            v = rng.gauss(0, 1)
        out.append(v)
    if rng.random() < 0.1:  # refused by the quantisers; f32/f16/bf16/fp32 keep it
        out[rng.randrange(n)] = rng.choice([float("nan"), float("inf"), -float("inf")])
    return np.array(out, dtype=np.float32)


def test_the_c_adapter_agrees_with_the_reference_on_seeded_codec_inputs(adapter, tmp_path):
    """Beyond the corpus: seeded inputs of every encoder-bearing codec (VQF in every mode but
    ggml), in shapes with partial blocks and groups, give the C adapter's answer (encoded digest,
    words, values) equal to the reference's — or, where the reference encoder refuses the input,
    a rejection with its rule."""
    rng = random.Random(32)
    pairs = [("vqf", {"name": n}) for n in VQF_CODECS] + [
        ("ninfer3", {"format": f or "", "layout": lay})
        for (f, lay), pair in NINFER3_CODECS.items()
        if pair.encoder is not None and f not in ("int32", None)
    ]
    agreed = refused = 0
    for i in range(240):
        fmt, codec = pairs[i % len(pairs)]
        if fmt == "vqf":
            group = VQF_CODECS[codec["name"]].row_group
            shape = (group * rng.randint(1, 3), 32 * rng.randint(1, 3))
            if group == 1 and rng.random() < 0.5:
                shape = (rng.randint(1, 3), rng.randint(1, 100))
            modes = [m for m in VQF_CODECS[codec["name"]].modes if m != "ggml"]
            encoder = rng.choice(modes)  # the default, or kestrel_legacy / trunc_ftz
        else:
            shape = (rng.randint(1, 3), rng.randint(1, 300))
            encoder = NINFER3_CODECS[(codec["format"] or None, codec["layout"])].encoder
        values = _values(rng, shape[0] * shape[1])
        case = {"format": fmt, "codec": codec, "shape": [str(d) for d in shape],
                "values": "values.bin", "values_dtype": "float32", "payload": "payload.bin",
                "encoder": encoder}  # fmt: skip
        ref = engine_codec(REFERENCE, {"format": fmt, "codec": codec})
        folder = tmp_path / str(i)
        folder.mkdir()
        (folder / "case.json").write_text(json.dumps(case))
        (folder / "values.bin").write_bytes(values.astype("<f4").tobytes())
        try:
            if fmt == "vqf":
                payload = ref.encode(values.reshape(shape), *shape, mode=encoder)
            else:
                payload = ref.encode(values.reshape(shape), shape)
        except WeightfileError as e:  # the reference refuses: so must C, with the same rule
            zeros = CodecCase(fmt, "seeded", str(i), codec, shape, np.zeros_like(values))
            (folder / "payload.bin").write_bytes(encode_payload(zeros))  # any decodable bytes
            c = run(adapter, f"{fmt}-codec", folder)
            assert c.returncode == 1, (case, c.stderr)
            assert c.stderr.split(": ")[:2] == [type(e).__name__, e.rule], (case, c.stderr)
            refused += 1
            continue
        (folder / "payload.bin").write_bytes(payload)
        c = run(adapter, f"{fmt}-codec", folder)
        assert c.returncode == 0, (case, c.stderr)
        want = codec_answer(REFERENCE, case, None, payload)  # words and values of the payload
        want = {"encoded_sha256": hashlib.sha256(payload).hexdigest(), **want}
        assert json.loads(c.stdout) == want, (case, first_difference(want, json.loads(c.stdout)))
        agreed += 1
    assert agreed >= 150 and refused >= 5


def test_the_c_adapter_decodes_any_words_as_the_reference_does(adapter, tmp_path):
    """Decoding alone, on bytes no encoder writes: every binary16 word (f16), every bfloat16
    word, and seeded random payloads of every VQF layout (NaN, Inf and subnormal scales, code
    −128) give the reference's words and values bit for bit."""
    rng = random.Random(7)
    every16 = np.arange(65536, dtype="<u2").tobytes()
    cases = [
        ("vqf", {"name": "f16"}, (256, 256), every16),
        ("ninfer3", {"format": "bf16", "layout": "contiguous_le_v1"}, (65536,), every16),
    ]
    for name, codec in VQF_CODECS.items():
        for _ in range(3):
            g = codec.row_group
            rows, cols = g * rng.randint(1, 2), 32 * rng.randint(1, 3)
            ref = engine_codec(REFERENCE, {"format": "vqf", "codec": {"name": name}})
            size = len(ref.encode(np.zeros((rows, cols), np.float32), rows, cols))
            cases.append(("vqf", {"name": name}, (rows, cols), rng.randbytes(size)))
    for i, (fmt, codec, shape, payload) in enumerate(cases):
        case = {"format": fmt, "codec": codec, "shape": [str(d) for d in shape],
                "payload": "payload.bin", "encoder": ""}  # fmt: skip
        folder = tmp_path / str(i)
        folder.mkdir()
        (folder / "case.json").write_text(json.dumps(case))
        (folder / "payload.bin").write_bytes(payload)
        c = run(adapter, f"{fmt}-codec", folder)
        assert c.returncode == 0, (case, c.stderr)
        want = codec_answer(REFERENCE, case, None, payload)
        assert json.loads(c.stdout) == want, (case, first_difference(want, json.loads(c.stdout)))


def _vqf_edit(data: bytearray, rng: random.Random) -> None:
    """One seeded edit of a valid VQF file: a header, arch, directory, gap or pad byte or word
    set to an edge value; then, usually, the FNV trailer recomputed so the edit reaches the
    strict checks (spec/vqf.md §strict-checks) instead of stopping at the checksum."""
    n = struct.unpack_from("<I", data, 12)[0]
    legacy = struct.unpack_from("<Q", data, 200)[0] == 0
    data_offset, file_len = struct.unpack_from("<QQ", data, 184 if legacy else 200)
    entry = 448 + 64 * rng.randrange(n)
    where = rng.choice(
        [rng.randrange(8, 448), rng.randrange(16, 196, 4), rng.randrange(448, 448 + 64 * n),
         entry + rng.choice([0, 5, 20, 31, 32, 36, 40, 44, 48, 56]),
         rng.randrange(448 + 64 * n, data_offset), rng.randrange(data_offset, file_len)]
    )  # fmt: skip
    if rng.random() < 0.5:
        data[where] = rng.choice([0, 1, 2, 3, 4, 5, 6, 0x20, 0x41, 0x80, 0xFF])
    else:
        where -= where % 4
        value = rng.choice([0, 1, 2, 3, 4, 5, 8, 16, 31, 33, 64, 4096, 2**31, 2**32 - 1])
        struct.pack_into("<I", data, where, value)
    if rng.random() < 0.8:
        h = fnv1a64(bytes(data[448 : 448 + 64 * n]))
        struct.pack_into("<Q", data, file_len, fnv1a64(bytes(data[data_offset:file_len]), h))


def test_the_c_adapter_agrees_with_the_reference_on_edited_vqf_files(adapter, tmp_path):
    """Beyond the corpus: seeded edits of every valid VQF corpus file. Where the reference's
    load chain refuses, C names the same rule (the chain's order is specified); otherwise C
    accepts with the reference's description exactly when the strict checks find nothing, and
    else names one of the violations they find (their order is not specified)."""
    sources = sorted(CORPUS_DIR.glob("vqf/v1/valid/*/*/input.vqf"))
    rng = random.Random(4)
    rules = set()
    for i in range(400):
        data = bytearray(sources[i % len(sources)].read_bytes())
        _vqf_edit(data, rng)
        path = tmp_path / f"{i}.vqf"
        path.write_bytes(data)
        c = subprocess.run([adapter, "vqf-container", str(path)], capture_output=True, text=True)
        got = tuple(c.stderr.split(": ")[:2]) if c.returncode == 1 else c.returncode
        try:
            with open_vqf(str(path)):
                pass
        except WeightfileError as e:
            assert got == (type(e).__name__, e.rule), (i, c.stderr)
            rules.add(e.rule)
            continue
        found = validate_vqf(str(path), checksum=True, backend=REFERENCE)
        if not found:
            assert c.returncode == 0, (i, c.stderr)
            assert json.loads(c.stdout) == json.loads(
                answer("vqf-container", str(path), "ref").stdout
            )
            continue
        assert got in {(v.error_class, v.rule) for v in found}, (i, c.stderr, found)
        rules.add(got[1])
    assert len(rules) >= 20  # the edits reach many different rules


def _ninfer3_words(fmt: str, shape: tuple[int, int], rng: random.Random) -> dict[str, np.ndarray]:
    """Seeded legal logical words of a .ninfer format (spec/ninfer3.md §grouped-formats,
    §nvfp4, §fp8-row): random codes of the domain, positive finite scales, subnormals included."""
    n, k = shape
    if fmt == "nvfp4":
        return {
            "codes": np.array([rng.randrange(16) for _ in range(n * k)], np.uint8).reshape(shape),
            "scales": np.array([rng.randrange(0x7F) for _ in range(n * k // 16)], np.uint8).reshape(
                n, k // 16
            ),
            "divisor": np.array(
                rng.choice([1, 0x3F000000, rng.randrange(1, 0x7F800000)]), np.uint32
            ),
        }
    if fmt == "fp8_e4m3fn_row_bf16":
        legal = [c for c in range(256) if c not in (0x7F, 0xFF)]
        codes = np.array([rng.choice(legal) for _ in range(n * k)], np.uint8).reshape(shape)
        return {
            "codes": codes,
            "scales": np.array([rng.randrange(1, 0x7F80) for _ in range(n)], np.uint16),
        }
    info = FORMATS[fmt]
    legal = [q for q in range(info.qmin, info.qmax + 1) if q not in info.illegal_codes]
    groups = -(-k // info.group_size)
    return {
        "codes": np.array([rng.choice(legal) for _ in range(n * k)], np.int8).reshape(shape),
        "scales": np.array(
            [rng.randrange(1, 0x7C00) for _ in range(n * groups)], np.uint16
        ).reshape(n, groups),
    }


def test_the_c_adapter_decodes_seeded_ninfer3_words_as_the_reference_does(adapter, tmp_path):
    """Decoding alone, beyond the corpus: seeded legal words of every quantised .ninfer format,
    packed by the reference's `encode_words`, in shapes with partial and padding groups."""
    rng = random.Random(35)
    pairs = [(f, lay) for (f, lay) in NINFER3_CODECS if f not in (None, "bf16", "fp32", "int32")]
    for i in range(60):
        fmt, layout = pairs[i % len(pairs)]
        shape = (128 * rng.randint(1, 2), 64 * rng.randint(1, 2)) if fmt == "nvfp4" else (
            rng.randint(1, 3), rng.randint(1, 300))  # fmt: skip
        codec = {"format": fmt, "layout": layout}
        payload = engine_codec(REFERENCE, {"format": "ninfer3", "codec": codec}).encode_words(
            _ninfer3_words(fmt, shape, rng), shape
        )
        case = {"format": "ninfer3", "codec": codec, "shape": [str(d) for d in shape],
                "payload": "payload.bin", "encoder": ""}  # fmt: skip
        folder = tmp_path / str(i)
        folder.mkdir()
        (folder / "case.json").write_text(json.dumps(case))
        (folder / "payload.bin").write_bytes(payload)
        c = run(adapter, "ninfer3-codec", folder)
        assert c.returncode == 0, (case, c.stderr)
        want = codec_answer(REFERENCE, case, None, payload)
        assert json.loads(c.stdout) == want, (case, first_difference(want, json.loads(c.stdout)))
