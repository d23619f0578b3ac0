"""benchmarks/vs_llamacpp_image.py's parts (issue 33 item 3): without a llama.cpp build it skips
saying why; with one (the cache folder's, as vs_llamacpp.py --build leaves it) llama.cpp's own
encoder loads the projector GGUF `convert --mmproj` writes from a tiny Qwen3-VL file and returns
image embeddings that agree with our fast tower's within the script's stated tolerance. No
timing is asserted."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("vs_llamacpp_image", BENCHMARKS /
                                                  "vs_llamacpp_image.py")  # fmt: skip
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_without_a_build_it_skips_saying_why(script, tmp_path, capsys):
    assert script.main(["--build-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("skipped: no libmtmd.so") and "--build" in out


def test_llama_cpp_encodes_our_projector_and_agrees(script, tmp_path):
    pytest.importorskip("transformers", reason="the tiny Qwen3-VL checkpoint needs transformers")
    folder = script.default_build_dir()
    lib = script.find_libmtmd(folder, build=False)
    if lib is None or shutil.which("c++") is None or not (folder / script.SOURCE).is_dir():
        pytest.skip("no llama.cpp build (benchmarks/vs_llamacpp.py --build) or no C++ compiler")
    from tests.strategies.qwen3_vl import shared_vqf
    from weightfile.bench.vision import fast_vision_model
    from weightfile.convert.vqf_mmproj import export_mmproj
    from weightfile.ref.vqf.read import open_vqf

    harness = script.build_harness(folder, lib, tmp_path)
    mmproj = export_mmproj(shared_vqf(), tmp_path / "mmproj.gguf")
    with open_vqf(shared_vqf()) as vqf:
        image, hwc = script.the_image(vqf.header.arch)
        hwc.tofile(tmp_path / "pixels.f32")
        _, ours = script.our_encode(fast_vision_model(vqf, 1), image, 1)
    side = hwc.shape[0]
    times = script.llama_encode(harness, mmproj, tmp_path / "pixels.f32", side, 1, 1,
                                tmp_path / "out.f32")  # fmt: skip
    assert len(times) == 1
    theirs = np.fromfile(tmp_path / "out.f32", np.float32)
    assert theirs.size == ours.size  # 196 tokens x (merger + 2 DeepStack) x 64
    got = script.agreement(ours, theirs.reshape(ours.shape))
    assert got["cosine"] >= script.TOLERANCE["cosine"]
    assert got["relative"] <= script.TOLERANCE["relative"]
    assert got["max_abs"] > 0  # llama.cpp's own arithmetic: close, not the same bits
