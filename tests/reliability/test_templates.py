"""Chat templates are bounded: recursion, size and time (weightfile/frontend/chat.py,
spec/ninfer3.md §component).

The reproducers of issue 14: a recursive macro ended in a raw RecursionError, `'x'*2**34` in a raw
MemoryError, and nested loops or a huge power ran for as long as they liked. Each is now one typed
`frontend.chat_template.*` error, raised within a bounded time.
"""

from __future__ import annotations

import time

import pytest

from weightfile.frontend.chat import CHATML, MAX_OUTPUT, render_chat
from weightfile.spec.errors import InvalidError

MESSAGES = [{"role": "user", "content": "hi"}]


def _refused(template: str, **bounds: float) -> tuple[str, float]:
    start = time.monotonic()
    with pytest.raises(InvalidError) as info:
        render_chat(template, MESSAGES, **bounds)
    assert info.value.path == "chat_template"
    return info.value.rule, time.monotonic() - start


def test_a_recursive_macro_is_a_recursion_error_of_ours() -> None:
    rule, _ = _refused("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}")
    assert rule == "frontend.chat_template.recursion"


@pytest.mark.parametrize(
    "template",
    [
        "{{ 'x' * 2**34 }}",
        "{{ [0] * 2**30 }}",
        "{{ 9 ** (9 ** 9) }}",
        "{{ 'x'.ljust(2**34) }}",
        "{{ 'x' | center(2**34) }}",
        "{{ '%0999999999d' % 1 }}",
        "{{ '{:>999999999}'.format(1) }}",
    ],
)
def test_a_huge_value_is_refused_before_it_is_built(template: str) -> None:
    rule, seconds = _refused(template)
    assert rule == "frontend.chat_template.output"
    assert seconds < 2  # refused, not built: 2**34 characters would take far longer


def test_the_output_is_bounded() -> None:
    # each piece is small; only the sum passes the bound
    template = "{% for i in range(100000) %}{{ 'abcdefghij' * 10 }}{% endfor %}"
    rule, _ = _refused(template, max_output=1 << 20)
    assert rule == "frontend.chat_template.output"
    assert len(render_chat("{{ 'x' * 1000 }}", MESSAGES, max_output=1000)) == 1000


@pytest.mark.parametrize(
    "template",
    [
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
        "{% for i in range(100000) %}{% for j in range(100000) %}{{ '' }}{% endfor %}{% endfor %}",
    ],
)
def test_nested_loops_stop_at_the_deadline(template: str) -> None:
    rule, seconds = _refused(template, max_seconds=0.3)
    assert rule == "frontend.chat_template.time"
    assert 0.3 <= seconds < 3


def test_ordinary_templates_are_unchanged_and_within_bounds() -> None:
    """`9**9**9` is (9**9)**9 in Jinja (left-associative), a 78-digit number: allowed."""
    assert (
        render_chat(CHATML, MESSAGES) == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    )
    assert render_chat("{{ 9**9**9 }}", MESSAGES) == str((9**9) ** 9)
    text = render_chat("{{ messages | tojson }}{{ 'ab' | indent(4) }}{{ 'x' * 3 }}", MESSAGES)
    assert text == '[{"content": "hi", "role": "user"}]abxxx'
    assert MAX_OUTPUT >= 1 << 20  # a long conversation still fits
