"""Where benchmarks/vs_llamacpp.py builds llama.cpp and where benchmarks/llamacpp_crosscheck.py
looks for it by default (issue 34 item 6): the user's cache folder, as every weightfile cache
($WEIGHTFILE_CACHE, else $XDG_CACHE_HOME/weightfile, else ~/.cache/weightfile), never a folder
of one development machine. Nothing is built or downloaded here."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def cache_env(monkeypatch, tmp_path):
    monkeypatch.delenv("WEIGHTFILE_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path


def test_vs_llamacpp_builds_in_the_cache_folder(cache_env, monkeypatch):
    script = load("vs_llamacpp")
    assert script.default_build_dir() == cache_env / "xdg" / "weightfile" / "llama-build"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert (
        script.default_build_dir() == cache_env / "home" / ".cache" / "weightfile" / "llama-build"
    )
    monkeypatch.setenv("WEIGHTFILE_CACHE", str(cache_env / "wf"))
    assert script.default_build_dir() == cache_env / "wf" / "llama-build"


def test_vs_llamacpp_build_uses_the_default_unless_told(cache_env, monkeypatch):
    script = load("vs_llamacpp")
    seen = []
    monkeypatch.setattr(script, "build_llama_bench", lambda folder, jobs: seen.append(folder))
    monkeypatch.setattr(script.shutil, "which", lambda _: None)
    script.main(["--build", "--quants", "q4_0"])
    script.main(["--build", "--build-dir", str(cache_env / "mine"), "--quants", "q4_0"])
    assert seen == [cache_env / "xdg" / "weightfile" / "llama-build", cache_env / "mine"]


def test_crosscheck_looks_where_vs_llamacpp_builds(cache_env, capsys):
    script = load("llamacpp_crosscheck")
    build = load("vs_llamacpp").default_build_dir()
    assert script.default_llama_dir() == build / "build" / "bin"
    assert script.default_bindings() == build / "llama_cpp_python-0.3.36"
    assert script.main([]) == 0  # nothing built there: it says where it looked
    assert f"no libllama.so in {build / 'build' / 'bin'}" in capsys.readouterr().out
