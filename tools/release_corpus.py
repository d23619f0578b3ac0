"""Build the conformance corpus release: a reproducible tarball and its SHA-256 beside it.

    python tools/release_corpus.py [--out DIR] [--force]

Writes `weightfile-conformance-<versions>.tar.gz` and `<that>.sha256` (sha256sum's format) into
DIR (default: the current folder). The same corpus always gives the same bytes
(conformance/export.py), so the published digest can be recomputed from a clone.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from weightfile.conformance.export import write_release
from weightfile.spec.errors import WeightfileError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("."), help="folder to write into")
    parser.add_argument("--force", action="store_true", help="replace existing release files")
    args = parser.parse_args(argv)
    try:
        path = write_release(args.out, overwrite=args.force)
    except WeightfileError as exc:
        print(f"release_corpus: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, FileExistsError) else 4
    digest = path.with_name(path.name + ".sha256").read_text().split()[0]
    print(f"{path}  sha256 {digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
