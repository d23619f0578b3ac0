"""`weightfile import HF_DIR OUT.ninfer --format F`: a tiny random transformers Qwen3.5 imported.

The checkpoint has both layer types. Its weights are rounded to bf16 values (so a bf16 import is
exact) except the GDN `A_log` / `dt_bias`, which keep full float32 bits and must arrive as fp32
words unchanged (spec/ninfer3.md §qwen35-names). The expected canonical tensors are cut from the
transformers modules the way their forward passes use them, independently of the importer's own
mapping.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from strategies.qwen35_checkpoint import FORMATS, SIZES, canonical, write_checkpoint

from weightfile.cli import main
from weightfile.families.qwen35.to_ninfer import import_checkpoint
from weightfile.fast.codecs.ninfer3.codec import get_codec
from weightfile.model_file import NInferModelFile
from weightfile.ref.ninfer3.read import open_artifact
from weightfile.spec.errors import InvalidError, NotFoundError, UnsupportedError
from weightfile.spec.ninfer3.text_names import text_parameters


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hf35")
    return folder, write_checkpoint(folder, tied=False, seed=11)


@pytest.fixture(scope="module")
def imported(checkpoint, tmp_path_factory):
    """Every --format imported once through the CLI (fast codecs)."""
    folder, _ = checkpoint
    out = tmp_path_factory.mktemp("out")
    paths = {}
    for fmt in FORMATS:
        paths[fmt] = out / f"m-{fmt}.ninfer"
        assert main(["import", str(folder), str(paths[fmt]), "--format", fmt]) == 0
    return paths


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_verifies(imported, fmt, capsys):
    assert main(["verify", str(imported[fmt])]) == 0
    assert "valid" in capsys.readouterr().out


def test_bf16_import_holds_the_hf_tensors_exactly(checkpoint, imported):
    _, model = checkpoint
    want = canonical(model)
    with NInferModelFile(imported["bf16"]) as f:
        config = f.artifact.component("text").config
        names = [p.name for p in text_parameters(config)]
        # every spec/ninfer3.md §qwen35-names parameter of both layer types
        assert sorted(names) == sorted(want)
        for name in names:
            got = f.decode(name, engine="ref").reshape(want[name].shape)
            np.testing.assert_array_equal(bits(got), bits(want[name]), err_msg=name)
        fp32 = [o.id for o in f.artifact.directory.objects if getattr(o, "format", None) == "fp32"]
    assert len(fp32) == 4  # a_log and dt_bias of the two GDN layers, nothing else


@pytest.mark.parametrize("fmt", FORMATS[1:])
def test_quantized_import_is_the_codec_round_trip(checkpoint, imported, fmt):
    _, model = checkpoint
    want = canonical(model)
    # fast == ref is the differential tests' job (and the whole-file comparison below)
    codec = get_codec(fmt, "row_split_k128_v1")
    with NInferModelFile(imported[fmt]) as f:
        config = f.artifact.component("text").config
        for p in text_parameters(config):
            got = f.decode(p.name, engine="fast").reshape(p.shape)
            expect = want[p.name]
            if not p.is_direct:  # matrices: quantised row by row, so alone == as a part
                expect = codec.decode(codec.encode(expect, p.shape), p.shape)
            np.testing.assert_array_equal(bits(got), bits(expect), err_msg=p.name)


def test_directory_follows_the_spec_examples(checkpoint, imported):
    folder, _ = checkpoint
    with open_artifact(imported["q5_g64_fp16"]) as a:
        d, text = a.directory, a.component("text")
        for role in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
            assert bytes(a.resource(role)) == (folder / role).read_bytes()
        generation = json.loads(bytes(a.resource("generation_config.json")))
        assert generation["eos_token_id"] == 2
        query = d.bindings["text/layers/1/attention/query"]
        assert query.parts is not None and len(query.parts) == 1
        assert {u.activation_policy for u in d.uses} == {"A16Only"}
        inputs = {(u.parameter, u.input) for u in d.uses}
    assert ("text/layers/1/attention/output", "text/layers/1/attention/gated_output") in inputs
    assert ("text/layers/0/gdn/a_projection", "text/layers/0/mixer_input") in inputs
    assert text.config["rope_parameters"] == {
        "rope_theta": 10000.0, "partial_rotary_factor": 0.25, "mrope_section": [1, 1, 0]
    }  # fmt: skip
    assert text.config["layer_types"] == SIZES["layer_types"]


def test_fast_and_ref_codecs_write_the_same_file(checkpoint, imported, tmp_path):
    folder, _ = checkpoint
    out = tmp_path / "r.ninfer"
    fmt = "q6_g64_fp16"
    assert main(["import", str(folder), str(out), "--format", fmt, "--engine", "ref"]) == 0
    # the 16-byte artifact_id is random (spec/ninfer3.md §entry-header): compare everything after
    # the header
    assert out.read_bytes()[32:] == imported[fmt].read_bytes()[32:]


def test_tied_checkpoint_binds_the_head_to_the_embedding(tmp_path):
    folder = tmp_path / "tied"
    write_checkpoint(folder, tied=True, seed=3)
    out = import_checkpoint(folder, tmp_path / "t.ninfer", fmt="q8_g32_fp16")[0]
    with open_artifact(out) as a:
        d = a.directory
        embedding = d.bindings["text/token_embedding"].object_id
        assert embedding is not None and d.bindings["text/output_head"].object_id == embedding
        assert a.component("text").config["tie_word_embeddings"] is True
        assert d.objects_by_id[embedding].format == "bf16"  # the head is the embedding itself


def broken_copy(folder: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "broken"
    shutil.copytree(folder, copy)
    return copy


def test_failures_are_typed_and_leave_nothing(checkpoint, tmp_path):
    folder, _ = checkpoint
    out = tmp_path / "o.ninfer"
    b = broken_copy(folder, tmp_path)
    (b / "generation_config.json").unlink()
    with pytest.raises(NotFoundError) as e:
        import_checkpoint(b, out)
    assert e.value.rule == "qwen35.import.missing_file" and e.value.path == "generation_config.json"
    (b / "generation_config.json").write_bytes(b"")
    with pytest.raises(InvalidError) as e:
        import_checkpoint(b, out)
    assert e.value.rule == "qwen35.import.resource" and e.value.path == "generation_config.json"
    shutil.copy(folder / "generation_config.json", b)
    cfg = json.loads((b / "config.json").read_text())
    (b / "config.json").write_text(json.dumps({**cfg, "linear_num_value_heads": 8}))
    with pytest.raises(InvalidError) as e:  # in_proj_z has 64 rows, the config says 128
        import_checkpoint(b, out, fmt="q4_g64_fp16")
    assert e.value.rule == "qwen35.import.shape"
    assert "linear_attn" in (e.value.path or "")
    (b / "config.json").write_text(json.dumps({**cfg, "num_experts": 4}))
    with pytest.raises(UnsupportedError):
        import_checkpoint(b, out)
    (b / "config.json").write_text(json.dumps({**cfg, "hidden_act": "gelu"}))
    with pytest.raises(UnsupportedError) as e:
        import_checkpoint(b, out)
    assert e.value.path == "hidden_act"
    (b / "config.json").write_text(json.dumps({**cfg, "num_hidden_layers": 2}))
    with pytest.raises(InvalidError) as e:  # three layer_types for two layers
        import_checkpoint(b, out)
    assert e.value.rule.startswith("ninfer3.text.")  # the spec/ninfer3.md §qwen35-config
    # validator's own rule
    assert e.value.path == "components.text.config.layer_types"
    assert list(tmp_path.glob("*.ninfer*")) == [] and list(tmp_path.glob(".o.ninfer*")) == []


def test_an_unused_text_tensor_is_refused(checkpoint, tmp_path):
    folder, _ = checkpoint
    b = broken_copy(folder, tmp_path)
    cfg = json.loads((b / "config.json").read_text())
    layers = cfg["layer_types"]
    (b / "config.json").write_text(
        json.dumps({**cfg, "num_hidden_layers": 2, "layer_types": layers[:2]})
    )
    with pytest.raises(InvalidError) as e:  # layer 2's tensors are left over
        import_checkpoint(b, tmp_path / "o.ninfer")
    assert e.value.rule == "qwen35.import.unexpected_tensor"
    assert (e.value.path or "").startswith("model.layers.2.")
    assert not (tmp_path / "o.ninfer").exists()


def test_a_small_limit_shards_the_file_set(checkpoint, imported, tmp_path, capsys):
    folder, _ = checkpoint
    paths = import_checkpoint(folder, tmp_path / "s.ninfer", fmt="q4_g64_fp16", limit=48 * 1024)
    assert len(paths) >= 3 and all(p.stat().st_size <= 48 * 1024 for p in paths)
    assert main(["verify", str(paths[0])]) == 0
    with NInferModelFile(paths[0]) as sharded, NInferModelFile(imported["q4_g64_fp16"]) as whole:
        for name in sorted(whole.artifact.directory.bindings):
            a, b = sharded.decode(name), whole.decode(name)
            assert a.view(np.uint32).tolist() == b.view(np.uint32).tolist(), name
    capsys.readouterr()
    # issue 34 item 10: --force replaces the sharded set with a one-file set, and the old set's
    # continuation volumes go; without --force the existing entry is a usage error (2)
    argv = ["import", str(folder), str(paths[0]), "--format", "bf16"]
    assert main(argv) == 2 and "ninfer3.writer.exists" in capsys.readouterr().err
    assert main([*argv, "--force"]) == 0
    assert sorted(tmp_path.glob("s.ninfer*")) == [paths[0]]
    assert main(["verify", str(paths[0])]) == 0
    with NInferModelFile(paths[0]) as replaced, NInferModelFile(imported["bf16"]) as whole:
        for name in sorted(whole.artifact.directory.bindings):
            a, b = replaced.decode(name), whole.decode(name)
            assert a.view(np.uint32).tolist() == b.view(np.uint32).tolist(), name


def test_force_never_replaces_a_symlinked_ninfer_destination(checkpoint, tmp_path, capsys):
    folder, _ = checkpoint
    target = tmp_path / "elsewhere"
    target.write_bytes(b"keep")
    (tmp_path / "l.ninfer").symlink_to(target)
    argv = ["import", str(folder), str(tmp_path / "l.ninfer"), "--format", "bf16", "--force"]
    assert main(argv) == 4 and "format.file.destination" in capsys.readouterr().err
    assert target.read_bytes() == b"keep" and (tmp_path / "l.ninfer").is_symlink()
