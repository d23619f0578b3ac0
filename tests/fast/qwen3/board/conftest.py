"""Every test here lets the board kernels use all the threads it asks for, however small the
product (fast/csrc/board.c otherwise starts a thread per 64K multiply-adds at most)."""

from __future__ import annotations

import pytest

from weightfile.fast.qwen3.board import ops


@pytest.fixture(autouse=True)
def every_thread_asked_for():
    with ops.thread_grain(1):
        yield
