"""The runner's protocol beyond pass and fail (conformance/README.md, "Verdicts", "Results as
JSON", "Taking the corpus without Python"): the `unsupported` verdict, the per-case timeout, the
`--json` schema, `conformance export` and the reproducible release tarball."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from weightfile.cli import main
from weightfile.conformance.export import contents, export_files, tarball, write_release
from weightfile.conformance.generate import CORPUS_DIR
from weightfile.conformance.runner import (
    RESULTS_SCHEMA,
    Answer,
    Implementation,
    bounded,
    case_ids,
    run_corpus,
    summary,
)

VALID_VQF = "vqf/v1/valid/*"


def script(tmp_path: Path, body: str) -> str:
    """A protocol command: a Python file answering `kinds` with vqf-container, then `body`."""
    path = tmp_path / "impl.py"
    path.write_text(
        "import sys, time\n"
        "if sys.argv[1:] == ['kinds']:\n"
        '    print(\'{"kinds": ["vqf-container"]}\'); sys.exit(0)\n' + body
    )
    return f"{sys.executable} {path}"


def test_exit_3_with_the_prefix_is_unsupported_not_a_failure() -> None:
    impl = Implementation(
        lambda kind, path: Answer(3, "", "unsupported: no strict checks\n"),
        frozenset({"vqf-container"}),
    )
    results = run_corpus(impl, pattern=VALID_VQF)
    assert results and all(r.verdict == "unsupported" for r in results)
    assert all(r.reason == "unsupported: no strict checks" for r in results)
    assert not any(r.passed or r.skipped for r in results)
    assert summary(results).endswith(f"0 failed, 0 skipped, {len(results)} unsupported")


@pytest.mark.parametrize(
    "answer",
    [Answer(3, "", "not supported here"), Answer(2, "", "unsupported: wrong status")],
    ids=["exit-3-without-prefix", "prefix-with-exit-2"],
)
def test_anything_else_is_still_a_failure(answer: Answer) -> None:
    impl = Implementation(lambda kind, path: answer, frozenset({"vqf-container"}))
    results = run_corpus(impl, pattern=VALID_VQF)
    assert results and all(r.verdict == "fail" for r in results)


def test_unsupported_cases_do_not_fail_the_run_and_json_has_its_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the command passes nothing but says "unsupported" for every invalid case
    command = script(
        tmp_path,
        "if '/invalid/' in sys.argv[2]:\n"
        "    print('unsupported: strict checks not written yet', file=sys.stderr); sys.exit(3)\n"
        "sys.exit(7)\n",
    )
    status = main(["conformance", "run", "--impl", command, "--run", "vqf/v1/*", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == RESULTS_SCHEMA
    assert doc["corpus"] == (CORPUS_DIR / "VERSION").read_text().splitlines()
    invalid = [cid for cid in case_ids(pattern="vqf/v1/invalid/*")]
    rows = {r["case"]: r for r in doc["results"]}
    assert {c for c, r in rows.items() if r["verdict"] == "unsupported"} == set(invalid)
    assert doc["counts"]["unsupported"] == len(invalid) == doc["unsupported"]
    assert doc["counts"]["fail"] == len(case_ids(pattern="vqf/v1/valid/*")) > 0
    assert all(r["kind"] for r in doc["results"] if r["verdict"] != "skip")
    assert status == 1  # the valid cases crashed (exit 7)


def test_a_command_slower_than_the_timeout_fails_that_case_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    slow = sorted(case_ids(pattern=VALID_VQF))[0]
    command = script(
        tmp_path,
        f"if sys.argv[2].endswith({slow.split('/')[-1]!r}) or {slow!r} in sys.argv[2]:\n"
        "    time.sleep(600)\n"
        "sys.exit(9)\n",
    )
    main(["conformance", "run", "--impl", command, "--run", VALID_VQF, "--timeout", "0.5"])
    lines = capsys.readouterr().out.splitlines()
    timed = [line for line in lines if "timed out after 0.5 s" in line]
    assert len(timed) == 1 and timed[0].startswith(f"FAIL {slow}")


def test_the_builtin_timeout_interrupts_code_that_swallows_exceptions() -> None:
    def spin() -> Answer:
        while True:
            # the code under test may catch Exception: the alarm is not one
            with contextlib.suppress(Exception):
                sum(range(1000))

    got = bounded(spin, 0.2)
    assert got.status == -1 and "timed out after 0.2 s" in got.stderr
    assert bounded(lambda: Answer(0, "{}", ""), 5.0) == Answer(0, "{}", "")


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
def test_the_timeout_must_be_a_positive_number(value: str) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["conformance", "run", "--timeout", value])
    assert stop.value.code == 2


def test_export_holds_the_corpus_and_sha256sum_checks_it(tmp_path: Path) -> None:
    dest = tmp_path / "corpus-export"
    assert main(["conformance", "export", str(dest)]) == 0
    corpus_files = sorted(p for p in CORPUS_DIR.rglob("*") if p.is_file())
    for src in corpus_files:
        assert (dest / "corpus" / src.relative_to(CORPUS_DIR)).read_bytes() == src.read_bytes()
    assert (dest / "README.md").read_bytes() == (CORPUS_DIR.parent / "README.md").read_bytes()
    listed = (dest / "SHA256SUMS").read_text().splitlines()
    assert len(listed) == len(corpus_files) + 3  # README, CHANGELOG, the C adapter
    if shutil.which("sha256sum"):  # coreutils, an implementation independent of ours
        subprocess.run(["sha256sum", "--quiet", "-c", "SHA256SUMS"], cwd=dest, check=True)
    digest, name = listed[0].split("  ")
    assert hashlib.sha256((dest / name).read_bytes()).hexdigest() == digest
    assert oct(os.stat(dest).st_mode & 0o777) == "0o755"
    assert [p.name for p in tmp_path.iterdir()] == ["corpus-export"]  # no staging left


def test_export_refuses_an_existing_folder_and_a_symlink(tmp_path: Path) -> None:
    (tmp_path / "there").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    assert main(["conformance", "export", str(tmp_path / "there")]) == 2
    assert main(["conformance", "export", str(tmp_path / "link")]) == 4
    assert not (tmp_path / "elsewhere").exists() and list((tmp_path / "there").iterdir()) == []


def test_the_release_tarball_is_reproducible_and_its_digest_checks(tmp_path: Path) -> None:
    name, first = tarball()
    time.sleep(1.1)  # a time stamp anywhere in the archive would now differ
    assert tarball() == (name, first)
    path = write_release(tmp_path)
    assert path.read_bytes() == first
    line = path.with_name(name + ".sha256").read_text()
    assert line == f"{hashlib.sha256(first).hexdigest()}  {name}\n"
    with tarfile.open(fileobj=io.BytesIO(first)) as tar:
        members = tar.getmembers()
        assert all(m.mtime == 0 and m.uid == 0 and m.isfile() for m in members)
        top = name.removesuffix(".tar.gz")
        got = {m.name.removeprefix(top + "/"): tar.extractfile(m).read() for m in members}
    assert got == dict(contents())
    assert len(got) == len(list(export_files())) + 1  # and SHA256SUMS
