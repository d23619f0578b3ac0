"""Image files are untrusted input (weightfile/frontend/image.py, `load_image`; issue 35 item 4).

The reproducers: PostScript content named `.png` was handed to Ghostscript (Pillow opened any
format it knows), a decompression-bomb PNG ended in a raw `DecompressionBombError`, and a
10000x10000 PNG of a few hundred kilobytes was decoded (gigabytes, sized by its header) before
being resized to a few patches. Each is now a typed error, the last two from the header alone.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import EpsImagePlugin, Image, ImageFile

from weightfile.frontend.image import (
    FORMATS,
    MAX_IMAGE_PIXELS,
    ImageSettings,
    load_image,
    preprocess,
)
from weightfile.spec.errors import InvalidError


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_header_only(path: Path, width: int, height: int) -> Path:
    """A 1-bit grey PNG declaring `width` x `height`, its IDAT one compressed row of zeros (the
    file is a few hundred bytes whatever it declares; decoding it would need the whole size)."""
    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    idat = zlib.compress(bytes(1 + (width + 7) // 8), 9)
    signature = b"\x89PNG\r\n\x1a\n"
    body = _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", idat) + _chunk(b"IEND", b"")
    path.write_bytes(signature + body)
    return path


def _refused(path: Path, **kwargs: int) -> InvalidError:
    with pytest.raises(InvalidError) as info:
        load_image(path, **kwargs)
    assert info.value.path == str(path)
    return info.value


@pytest.fixture
def no_decoding(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any pixel decoding fails the test: a refusal must come from the header alone."""

    def load(self: ImageFile.ImageFile) -> None:
        raise AssertionError(f"decoded a {self.size} image")

    monkeypatch.setattr(ImageFile.ImageFile, "load", load)


def test_postscript_named_png_is_refused_without_ghostscript(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def ghostscript(*args: object, **kwargs: object) -> None:
        raise AssertionError("Ghostscript was called")

    monkeypatch.setattr(EpsImagePlugin, "Ghostscript", ghostscript)
    path = tmp_path / "x.png"
    path.write_bytes(b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 16 16\nshowpage\n")
    assert _refused(path).rule == "frontend.image.unreadable"


def test_a_decompression_bomb_is_a_typed_error(tmp_path: Path, no_decoding: None) -> None:
    """40000 x 40000 = 1.6e9 pixels: past Pillow's own error threshold (2 x 89,478,485)."""
    path = png_header_only(tmp_path / "bomb.png", 40000, 40000)
    assert path.stat().st_size < 1000
    error = _refused(path, max_image_pixels=1 << 40)  # Pillow's check, not ours, fires here
    assert error.rule == "frontend.image.size"


@pytest.mark.parametrize("size", [(10000, 10000), (8000, 6000)])
def test_a_large_header_is_refused_before_decoding(
    tmp_path: Path, no_decoding: None, size: tuple[int, int]
) -> None:
    """10000 x 10000 = 1e8 pixels: under Pillow's error threshold (only a warning there, typed
    here); 8000 x 6000 = 4.8e7: under Pillow's warning too, over the default bound. Both are
    refused from the header: `load()` is never called."""
    width, height = size
    path = png_header_only(tmp_path / "big.png", width, height)
    assert _refused(path).rule == "frontend.image.size"
    assert width * height > MAX_IMAGE_PIXELS


def test_the_bound_names_the_size_and_the_option(tmp_path: Path, no_decoding: None) -> None:
    path = png_header_only(tmp_path / "big.png", 8000, 6000)
    assert "8000x6000" in str(_refused(path))
    assert "--max-image-pixels" in str(_refused(path))


def test_the_pixel_bound_is_configurable_and_exact(tmp_path: Path) -> None:
    path = tmp_path / "ok.png"
    Image.fromarray(np.full((40, 50, 3), 7, np.uint8)).save(path)
    assert load_image(path, max_image_pixels=2000).size == (50, 40)
    assert _refused(path, max_image_pixels=1999).rule == "frontend.image.size"
    with pytest.raises(InvalidError) as info:
        preprocess(path, ImageSettings(max_image_pixels=1999))
    assert info.value.rule == "frontend.image.size"


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "WEBP", "GIF", "BMP", "TIFF", "PPM", "ICO"])
def test_only_the_whitelisted_formats_open(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / f"x.{fmt.lower()}"
    Image.fromarray(np.full((16, 16, 3), 200, np.uint8)).save(path, format=fmt)
    if fmt in FORMATS:
        assert load_image(path).size == (16, 16)
    else:
        assert _refused(path).rule == "frontend.image.unreadable"
