"""Run the corpus against an implementation and judge each answer (conformance/README.md).

An implementation is either a command (`--impl "COMMAND"`: run as COMMAND + [KIND, PATH], and
asked `COMMAND kinds` once for the case kinds it answers) or a built-in engine answered
in-process. Cases of a kind the implementation does not declare are skipped, not failed. A
valid case passes when the command exits 0 and stdout is JSON equal to want.json; an invalid
case passes when it exits 1 and the first stderr line is `ErrorClass: rule-id: message` with a
(class, rule) pair the case accepts. An implementation may answer a case of a kind it declares with
exit 3 and a first stderr line `unsupported: why`: the verdict is `unsupported`, neither a pass
nor a failure (README, "Verdicts"). Anything else fails.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from weightfile.spec.vqf.rules import RETIRED, RULES

from .adapter import (
    PASSPHRASE_VARIABLE,
    SIGN_PUB_VARIABLE,
    Answer,
    answer,
    notes,
    supported_kinds,
    unsupported,
)
from .generate import CORPUS_DIR

#: The stderr line of a rejection: class name, rule id, free text.
REJECTION = re.compile(r"^([A-Za-z]+): ([a-z0-9_.]+): ")
#: The default per-case time bound (README, "Protocol"); `--timeout` changes it.
TIMEOUT_SECONDS = 60.0
#: The exit status and stderr prefix of an `unsupported` answer (README, "Verdicts").
UNSUPPORTED_STATUS = 3
UNSUPPORTED_PREFIX = "unsupported:"
#: The four verdicts, in the order a summary lists them.
VERDICTS = ("pass", "fail", "unsupported", "skip")
#: The tag of `conformance run --json` documents; bumped when their shape changes.
RESULTS_SCHEMA = "weightfile-conformance-results/1"


@dataclass(frozen=True, slots=True)
class Implementation:
    """What answers cases: `ask(kind, path)`, and the case kinds it declares."""

    ask: Callable[[str, Path], Answer]
    kinds: frozenset[str]
    reasons: dict[str, str] = field(default_factory=dict)  # why an undeclared kind is skipped
    notes: dict[str, str] = field(default_factory=dict)  # how a declared kind is answered


@dataclass(frozen=True, slots=True)
class Result:
    """One case's verdict (one of VERDICTS) and why; `seconds` is the implementation's time."""

    case: str
    verdict: str
    reason: str
    kind: str = ""
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    @property
    def skipped(self) -> bool:
        return self.verdict == "skip"


def case_ids(root: Path = CORPUS_DIR, pattern: str = "*") -> list[str]:
    """The manifest's case ids that match the glob `pattern`, in manifest order."""
    ids: list[str] = []
    for manifest in sorted(root.glob("files-*")):
        ids += [line for line in manifest.read_text().splitlines() if line]
    return [cid for cid in ids if fnmatch.fnmatchcase(cid, pattern)]


def timed_out(seconds: float) -> Answer:
    """The answer recorded for a call that outlived the time bound (a failure)."""
    return Answer(-1, "", f"timed out after {seconds:g} s")


def command_implementation(command: str, timeout: float = TIMEOUT_SECONDS) -> Implementation:
    """Run `command` with the case kind and input path appended, as the protocol describes; a
    call that takes longer than `timeout` seconds is killed and fails."""
    argv = shlex.split(command)

    def run(*args: str) -> Answer:
        try:
            done = subprocess.run([*argv, *args], capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return timed_out(timeout)
        return Answer(done.returncode, done.stdout, done.stderr)

    reply = run("kinds")
    kinds, reasons = declared_kinds(reply)
    ask = lambda kind, path: run(kind, str(path))  # noqa: E731
    return Implementation(ask, kinds, reasons, declared_notes(reply))


def declared_kinds(reply: Answer) -> tuple[frozenset[str], dict[str, str]]:
    """The kinds a command declares — `{"kinds": [...]}` on stdout and exit 0 — and the
    optional `"unsupported": {kind: why}` it gives for kinds it leaves out."""
    try:
        doc = json.loads(reply.stdout) if reply.status == 0 else None
    except json.JSONDecodeError:
        doc = None
    if not isinstance(doc, dict) or not isinstance(doc.get("kinds"), list):
        raise ValueError(
            'the implementation did not answer `kinds` with {"kinds": [...]} and exit 0 '
            f"(exit {reply.status}, stdout {reply.stdout[:80]!r})"
        )
    why = doc.get("unsupported")
    reasons = {str(k): str(v) for k, v in why.items()} if isinstance(why, dict) else {}
    return frozenset(str(k) for k in doc["kinds"]), reasons


def declared_notes(reply: Answer) -> dict[str, str]:
    """The optional `"notes": {kind: text}` of a `kinds` reply already accepted by
    `declared_kinds` (informational: how a declared kind is answered)."""
    notes = json.loads(reply.stdout).get("notes")
    return {str(k): str(v) for k, v in notes.items()} if isinstance(notes, dict) else {}


class _Alarm(BaseException):
    """Raised by SIGALRM inside a built-in answer; a BaseException so that no `except
    Exception` of the code under test can swallow it."""


def bounded(ask: Callable[[], Answer], timeout: float | None) -> Answer:
    """`ask()` interrupted after `timeout` seconds of wall time (SIGALRM, main thread only;
    without a bound or off the main thread it runs to the end)."""
    if not timeout or not hasattr(signal, "setitimer"):
        return ask()

    def ring(signum: int, frame: object) -> None:
        raise _Alarm

    try:
        previous = signal.signal(signal.SIGALRM, ring)
    except ValueError:  # not the main thread: no alarm
        return ask()
    try:
        signal.setitimer(signal.ITIMER_REAL, timeout)
        return ask()
    except _Alarm:
        return timed_out(timeout)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def builtin_implementation(engine: str, timeout: float | None = None) -> Implementation:
    """The ref or fast engine answered in-process (the same code the adapter command runs); the
    name is the protocol's `--engine`, mapped to its Backend by `adapter.answer`. With `timeout`
    a case that runs longer fails as a timed-out command would."""
    kinds = frozenset(supported_kinds(engine))
    ask = lambda kind, path: bounded(lambda: answer(kind, str(path), engine), timeout)  # noqa: E731
    return Implementation(ask, kinds, unsupported(engine), notes(engine))


def unsupported_reason(got: Answer) -> str | None:
    """The implementation's reason when `got` is an `unsupported` answer (exit 3, first stderr
    line `unsupported: why`), else None (README, "Verdicts")."""
    line = got.stderr.splitlines()[0] if got.stderr else ""
    if got.status == UNSUPPORTED_STATUS and line.startswith(UNSUPPORTED_PREFIX):
        return line[len(UNSUPPORTED_PREFIX) :].strip() or "(no reason given)"
    return None


def judge(case: dict[str, Any], want: Any, got: Answer) -> tuple[bool, str]:
    """Whether `got` is the right answer to `case`, and why not."""
    if case["expect"] == "accept":
        if got.status != 0:
            return False, f"expected accept, got exit {got.status}: {got.stderr.strip()[:200]}"
        try:
            described = json.loads(got.stdout)
        except json.JSONDecodeError as exc:
            return False, f"stdout is not JSON ({exc.msg})"
        if described != want:
            return False, "description differs from want.json: " + first_difference(want, described)
        return True, "accepted"
    if got.status != 1:
        kind = "accepted" if got.status == 0 else "crashed"
        return False, f"expected {case['error_class']}: {case['rule']}, {kind} (exit {got.status})"
    line = got.stderr.splitlines()[0] if got.stderr else ""
    match = REJECTION.match(line)
    if not match:
        return False, f"stderr does not start with 'ErrorClass: rule-id: ': {line[:200]!r}"
    pair = {"error_class": match[1], "rule": match[2]}
    if pair not in case["accepted"] and not successor_of_accepted(case, pair):
        return False, f"expected {case['error_class']}: {case['rule']}, got {match[1]}: {match[2]}"
    return True, f"{match[1]}: {match[2]}"


def successor_of_accepted(case: dict[str, Any], pair: dict[str, str]) -> bool:
    """A rule that replaced an accepted, retired one (spec/vqf/rules.py RETIRED) is accepted."""
    return any(
        RETIRED.get(a["rule"]) == pair["rule"]
        and RULES[pair["rule"]].error_class == pair["error_class"]
        for a in case["accepted"]
    )


def first_difference(want: Any, got: Any, where: str = "") -> str:
    """The JSON path of the first place two descriptions disagree."""
    if isinstance(want, dict) and isinstance(got, dict):
        for key in sorted(set(want) | set(got)):
            if want.get(key) != got.get(key):
                return first_difference(want.get(key), got.get(key), f"{where}.{key}")
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        for i, (w, g) in enumerate(zip(want, got, strict=True)):
            if w != g:
                return first_difference(w, g, f"{where}[{i}]")
    return f"{where or '.'}: want {json.dumps(want)[:80]}, got {json.dumps(got)[:80]}"


def case_kind(case: dict[str, Any]) -> str:
    """`<format>-<kind>`, e.g. `vqf-container` (README, "Case kinds")."""
    return f"{case['format']}-{case['kind']}"


#: The one conformance level below a whole kind: the VQF engine's own load chain
#: (spec/vqf.md §loader-chain).
LOADER_LEVEL = "vqf-container:loader"


def declared(case: dict[str, Any], kinds: frozenset[str]) -> bool:
    """Whether an implementation declaring `kinds` answers `case` (README, "Case kinds").

    `vqf-container:loader` takes every valid VQF container case and the invalid ones whose origin is
    `loader`; the strict checks of spec/vqf.md §strict-checks and the unimplemented features are
    skipped.
    """
    kind = case_kind(case)
    if kind in kinds:
        return True
    return (
        kind == "vqf-container"
        and LOADER_LEVEL in kinds
        and (case["expect"] == "accept" or case.get("origin") == "loader")
    )


@contextmanager
def case_environment(case: dict[str, Any]) -> Iterator[None]:
    """The case's keys as the engine's variables while it runs (README, "Protected cases").

    VLLM_VQF_KEY holds the passphrase and VLLM_VQF_SIGN_PUB the trusted public key when the
    case gives them; both are removed otherwise, so a key in the caller's environment cannot
    answer a case that gives none. The caller's values come back afterwards.
    """
    keys = case.get("keys", {})
    wanted = {PASSPHRASE_VARIABLE: keys.get("passphrase"), SIGN_PUB_VARIABLE: keys.get("sign_pub")}
    saved = {name: os.environ.get(name) for name in wanted}
    try:
        for name, value in wanted.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def run_case(root: Path, cid: str, impl: Implementation) -> Result:
    folder = root / cid
    case = json.loads((folder / "case.json").read_text())
    kind = case_kind(case)
    if not declared(case, impl.kinds):
        why = impl.reasons.get(kind, f"{kind} not declared")
        return Result(cid, "skip", f"skipped: {why}", kind)
    want_path = folder / "want.json"
    want = json.loads(want_path.read_text()) if want_path.exists() else None
    target = folder / case["input"] if "input" in case else folder
    start = time.perf_counter()
    with case_environment(case):
        got = impl.ask(kind, target)
    seconds = time.perf_counter() - start
    why = unsupported_reason(got)
    if why is not None:
        return Result(cid, "unsupported", f"unsupported: {why}", kind, seconds)
    passed, reason = judge(case, want, got)
    return Result(cid, "pass" if passed else "fail", reason, kind, seconds)


def run_corpus(
    impl: Implementation,
    *,
    root: Path = CORPUS_DIR,
    pattern: str = "*",
    progress: Callable[[list[str]], Iterable[str]] | None = None,
) -> list[Result]:
    """Every matching case's result; `progress` wraps the case ids (the CLI's bar)."""
    ids = case_ids(root, pattern)
    return [run_case(root, cid, impl) for cid in (ids if progress is None else progress(ids))]


def counts(results: list[Result]) -> dict[str, int]:
    """How many results have each verdict, every verdict present (0 when none)."""
    return {v: sum(r.verdict == v for r in results) for v in VERDICTS}


def summary(results: list[Result]) -> str:
    n = counts(results)
    text = f"{n['pass']} passed, {n['fail']} failed, {n['skip']} skipped"
    return text + (f", {n['unsupported']} unsupported" if n["unsupported"] else "")


def results_document(results: list[Result], corpus_version: list[str]) -> dict[str, Any]:
    """The `--json` document (README, "Results as JSON"): the schema tag, the corpus version
    lines, the counts, and one row per case in run order."""
    n = counts(results)
    rows = [
        {"case": r.case, "kind": r.kind, "verdict": r.verdict, "reason": r.reason,
         "seconds": round(r.seconds, 6), "passed": r.passed, "skipped": r.skipped}
        for r in results
    ]  # fmt: skip
    return {
        "schema": RESULTS_SCHEMA,
        "corpus": corpus_version,
        "counts": n,
        "passed": n["pass"],
        "failed": n["fail"],
        "skipped": n["skip"],
        "unsupported": n["unsupported"],
        "results": rows,
    }
