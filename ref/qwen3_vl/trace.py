"""Trace names of the Qwen3-VL family (spec/numerics.md §vision-merge): the text tower's of
ref/qwen3 for a prompt without images; with images the vision names (ref/qwen3_vl/vision.py) come
first and `layers.j.deepstack` follows each of the first ds layers."""

from __future__ import annotations

from weightfile.ref.qwen3.trace import names_for as text_names


def names_for(config) -> list[str]:
    """The names of a forward pass without images (the registry's `trace` entry)."""
    return text_names(config.text)
