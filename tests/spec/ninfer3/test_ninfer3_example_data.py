"""The spec/ninfer3.md §examples example directories in tests/data are the published bytes,
unchanged (spec/ninfer3.md §examples).

The digests were taken from the upstream files when they were copied into the tree; a changed
byte (an editor's reformat, an EOL conversion) would silently change what the example tests prove.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from strategies.ninfer3 import EXAMPLE_SHARDED, EXAMPLE_TEXT

# file -> (characters, SHA-256 of the bytes); the character counts are the ones
# spec/ninfer3.md §examples states.
PUBLISHED = {
    EXAMPLE_TEXT: (7_667, "f82311ee1bec7e73f65b7b96e1c4d9561e8bb4f584b4c5ef15d17a8fdaffc8da"),
    EXAMPLE_SHARDED: (8_163, "3c9fb51c212733da091c3385cd6c67dbe273cfca28701572ffbb40d1c0aebd6b"),
}


@pytest.mark.parametrize("path", list(PUBLISHED), ids=lambda p: Path(p).stem)
def test_example_directory_is_the_published_bytes(path: Path) -> None:
    chars, digest = PUBLISHED[path]
    data = path.read_bytes()
    assert hashlib.sha256(data).hexdigest() == digest
    text = data.decode("utf-8")
    assert len(text) == chars
    # pretty-printed with a 2-space indent and one trailing newline (spec/ninfer3.md §examples)
    assert text == json.dumps(json.loads(text), indent=2, ensure_ascii=False) + "\n"
