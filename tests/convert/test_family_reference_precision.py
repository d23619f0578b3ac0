"""`convert --wmode f32|f16` and `import --qtype f32|f16` of a Qwen3-MoE and a Qwen3-VL checkpoint
(issue 34 item 6): the reference-precision files of spec/vqf.md §text-tensors are written, not
refused, and hold the checkpoint's values.

The regression: the plan switches the embedding to f32 for wmode f32 (spec/vqf.md §converter) and
the family importers' option check accepted only an f16 embedding, so f32 was refused by a message
that listed it as allowed. The files are verified as `verify` does: the only violations are the
documented `vqf.directory.qtype_family` reports of the F32/F16 projections under the q8_* names,
and the token embedding's bytes are the checkpoint's (f32 exactly; f16 the truncating conversion,
spec/vqf.md §f16, checked against NumPy on the values where it and round-to-nearest agree).
"""

from __future__ import annotations

import numpy as np
import pytest

from weightfile.cli import main
from weightfile.ref.vqf.read import open_vqf
from weightfile.ref.vqf.validate import validate
from weightfile.spec.vqf.qtypes import QType

pytest.importorskip("torch", reason="the tiny checkpoints need the 'external' extra (torch)")
pytest.importorskip("transformers", reason="the tiny checkpoints need transformers")
safetensors_numpy = pytest.importorskip("safetensors.numpy")

EMBED = {
    "moe": "model.embed_tokens.weight",
    "vl": "model.language_model.embed_tokens.weight",
}


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    from strategies.qwen3_moe_checkpoint import build_model, save
    from strategies.qwen3_vl import shared_checkpoint

    return {"moe": save(build_model(), tmp_path_factory.mktemp("moe")), "vl": shared_checkpoint()}


def checkpoint_embedding(folder, family: str) -> np.ndarray:
    tensors = {}
    for shard in sorted(folder.glob("*.safetensors")):
        tensors.update(safetensors_numpy.load_file(str(shard)))
    return tensors[EMBED[family]].astype(np.float32)


@pytest.mark.parametrize("family", ["moe", "vl"])
@pytest.mark.parametrize("wmode", ["f32", "f16"])
@pytest.mark.parametrize("command", ["convert", "import"])
def test_reference_precision_files_are_written_and_verify(
    checkpoints, tmp_path, family, wmode, command
):
    out = tmp_path / "m.vqf"
    option = "--wmode" if command == "convert" else "--qtype"
    assert main([command, str(checkpoints[family]), str(out), option, wmode]) == 0
    found = validate(out, checksum=True)
    assert found, "a reference-precision file is reported by verify (spec/vqf.md §text-tensors)"
    assert {v.rule for v in found} == {"vqf.directory.qtype_family"}
    assert all(v.path.startswith("directory[") for v in found)
    want_qtype = QType.F32 if wmode == "f32" else QType.F16
    with open_vqf(out) as f:
        entries = {e.name: e for e in f.entries}
        assert all(entries[n].qtype == want_qtype for n in entries if n.startswith("q8_"))
        assert entries["token_embed"].qtype == want_qtype
        stored = np.frombuffer(
            f.payload("token_embed"), "<f4" if wmode == "f32" else "<f2"
        ).reshape(entries["token_embed"].rows, entries["token_embed"].cols)
        got = stored.astype(np.float32)
    want = checkpoint_embedding(checkpoints[family], family)
    if wmode == "f32":
        assert got.view(np.uint32).tolist() == want.view(np.uint32).tolist()
    else:
        # truncation and round-to-nearest agree where the dropped 13 bits are below half and the
        # value is an f16 normal (the engine's conversion flushes subnormals to zero)
        exact = ((want.view(np.uint32) & 0x1FFF) < 0x1000) & (np.abs(want) >= 2.0**-14)
        assert exact.mean() > 0.4
        rne = want.astype(np.float16).astype(np.float32)
        assert (got[exact].view(np.uint32) == rne[exact].view(np.uint32)).all()
        assert np.abs(got - want).max() <= np.abs(want).max() * 2.0**-10
