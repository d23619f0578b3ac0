"""Coverage-guided fuzzing of the readers with atheris (issue 14 item 6), outside CI.

    pip install -e '.[fuzz]'
    python tools/atheris_fuzz.py vqf  CORPUS_DIR [libFuzzer flags: -max_total_time=60 -timeout=10]
    python tools/atheris_fuzz.py ninfer3 CORPUS_DIR ...

Each input is one file: a VQF file, or a single-file `.ninfer` entry. It runs through the same
`run_one` as the mutation campaign (tests/fuzz/worker.py: validate, open, decode every name with
the fast engine, and with ref every 16th input, bit for bit), in process so that atheris sees the
coverage of weightfile's Python code. A "typed" or "ok" outcome is fine; "other" raises, and
libFuzzer saves the input as crash-*. An empty CORPUS_DIR is filled with the campaign's seeds
first (single-file seeds only). Memory and time limits are libFuzzer's (-rss_limit_mb,
-timeout); the first found crash, signal or timeout ends the run, as libFuzzer does.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import atheris

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

with atheris.instrument_imports(include=["weightfile"]):
    from fuzz import worker  # imports weightfile under instrumentation
from fuzz.mutate import load_seeds  # noqa: E402


class Other(Exception):
    """An input the library did not answer with a typed error or a result."""


def main() -> None:
    fmt = sys.argv.pop(1)
    suffix = ".vqf" if fmt == "vqf" else ".ninfer"
    corpus = next((Path(a) for a in sys.argv[1:] if not a.startswith("-")), None)
    if corpus is not None:
        corpus.mkdir(parents=True, exist_ok=True)
        if not any(corpus.iterdir()):
            for i, seed in enumerate(s for s in load_seeds(fmt) if len(s.files) == 1):
                if not seed.sparse:
                    (corpus / f"seed-{i:03d}").write_bytes(seed.files[seed.entry])
    scratch = Path(tempfile.mkdtemp(prefix="wf-atheris-"))
    entry = scratch / f"input{suffix}"
    count = [0]

    def one_input(data: bytes) -> None:
        entry.write_bytes(data)
        count[0] += 1
        # ref every 16th input: under instrumentation the slow oracle dominates (about 1 input/s
        # with every 4th), and atheris's gain is coverage, not more ref comparisons
        outcome, detail = worker.run_one(str(entry), count[0] % 16 == 0, True)
        if outcome == "other":
            raise Other(detail)

    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if not any(a.startswith("-artifact_prefix=") for a in sys.argv):  # never into the tree
        out = (corpus.parent if corpus else Path(tempfile.gettempdir())) / "atheris-artifacts"
        out.mkdir(exist_ok=True)
        sys.argv.append(f"-artifact_prefix={out}/")
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
