"""The checksum progress bar: drawn on a terminal, silent otherwise."""

from weightfile.progress import ProgressBar


def test_progress_bar_reaches_100_percent(capsys):
    bar = ProgressBar(1000, "fnv1a64", enabled=True)
    for _ in range(10):
        bar(100)
    bar.close()
    err = capsys.readouterr().err
    assert err.startswith("\rfnv1a64 [") and "100.0%" in err and err.endswith("\n")


def test_progress_bar_is_silent_when_disabled(capsys):
    bar = ProgressBar(10, "x", enabled=False)
    bar(10)
    bar.close()
    assert capsys.readouterr().err == ""


def test_the_no_compiler_warning_is_one_line_once_per_cache(tmp_path):
    import subprocess
    import sys

    code = (
        "import warnings; warnings.simplefilter('always')\n"
        "from weightfile.fast.vqf.fnv1a64 import fnv1a64\n"
        "print(hex(fnv1a64(b'a')))\n"
    )
    env = {"CC": str(tmp_path / "no-such-cc"), "WEIGHTFILE_CACHE": str(tmp_path), "PATH": ""}
    runs = [
        subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        for _ in range(2)
    ]
    first = [ln for ln in runs[0].stderr.splitlines() if "RuntimeWarning" in ln]
    assert len(first) == 1 and "C kernels unavailable" in first[0] and len(first[0]) < 400
    assert "C kernels unavailable" not in runs[1].stderr  # the cache was told once
    assert all(r.stdout.strip() == "0xaf63dc4c8601ec8c" for r in runs)  # FNV-1a-64 of b"a"


def test_the_compile_note_is_one_line(tmp_path, monkeypatch, capsys):
    from weightfile.fast import _native, notify

    cc = _native.compiler()
    assert cc is not None, "CI machines have a C compiler"
    notes: list[str] = []
    monkeypatch.setattr(notify, "on_compile", notes.append)
    src = tmp_path / "k.c"
    src.write_text("int wf_one(void) { return 1; }\n")
    _native.build(cc, [src], tmp_path / "out")
    _native.build(cc, [src], tmp_path / "out")  # cached: no second compile, no second note
    assert notes == ["weightfile: compiling the C kernels (1 file(s), once)"]
