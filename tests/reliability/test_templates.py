"""Chat templates are bounded: recursion, size and time (weightfile/frontend/chat.py,
spec/ninfer3.md §component).

The reproducers of issue 14: a recursive macro ended in a raw RecursionError, `'x'*2**34` in a raw
MemoryError, and nested loops or a huge power ran for as long as they liked. Each is now one typed
`frontend.chat_template.*` error, raised within a bounded time.
"""

from __future__ import annotations

import os
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


# Issue 35 item 3: the time bound was checked once per template line, so C-level work inside one
# line ran uninterrupted, `//` and `+` and `~` were never size-checked, and `%` on integers was
# computed before its check. Each reproducer below would run for minutes to hours (or exhaust
# memory) on a line-checked render; here each ends in one typed error.

DIVISIONS = "{% set a = 7**1000000 %}{% set b = 3**600000 %}{{ " + " + ".join(["(a // b)"] * 160)


def test_big_integer_floor_divisions_on_one_line_are_refused_before_they_run() -> None:
    """160 divisions of a 845,098-digit integer by a 286,273-digit one: 49 s of CPU in one line
    before; now the first big power is refused by the integer bound."""
    rule, _ = _refused(DIVISIONS + " }}", max_seconds=1)
    assert rule == "frontend.chat_template.output"


@pytest.mark.parametrize("operator", ["%", "//", "-", "+", "*", "/"])
def test_arithmetic_on_huge_integers_is_refused_before_it_is_computed(operator: str) -> None:
    """The operands come from the caller here (no template can build them any more); each
    operator checks them before computing (`%` on two such integers was seconds of CPU)."""
    with pytest.raises(InvalidError) as info:
        render_chat(f"{{{{ (a {operator} b) > 0 }}}}", MESSAGES, a=7**1000000, b=3**600000)
    assert info.value.rule == "frontend.chat_template.output"
    assert "integer" in str(info.value)


@pytest.mark.parametrize(
    "step",
    ["ns.s ~ ns.s", "ns.s + ns.s", "ns.s ~ ns.s ~ ns.s ~ ns.s"],
)
@pytest.mark.parametrize("start", ["'x'", "[1]"])
def test_doubling_loops_stop_at_the_size_bound(step: str, start: str) -> None:
    """A doubling loop of 34 steps builds 16 GiB; the bound stops it at 4 Mi items."""
    template = (
        f"{{% set ns = namespace(s={start}) %}}"
        f"{{% for i in range(34) %}}{{% set ns.s = {step} %}}{{% endfor %}}{{{{ ns.s | length }}}}"
    )
    rule, _ = _refused(template)
    assert rule == "frontend.chat_template.output"


def test_concatenation_is_measured_before_it_is_joined() -> None:
    assert render_chat("{{ 'a' ~ 1 ~ [2] }}", MESSAGES) == "a1[2]"
    rule, _ = _refused("{{ ('x' * 600 ~ 'y' * 600) | length }}", max_output=1000)
    assert rule == "frontend.chat_template.output"


#: Every value here is under the size bounds, and all the work happens inside one template line
#: in C-level calls (4 Mi strings of 4 Mi characters each, built and measured): hours of CPU.
ONE_LINE_OF_C = (
    "{{ ((range(100000) | list) * 40) | map('string') | map('center', 4000000) | map('length')"
    " | sum }}"
)


def test_c_level_work_inside_one_line_stops_at_the_cpu_bound() -> None:
    rule, _ = _refused(ONE_LINE_OF_C, max_seconds=0.5)
    assert rule == "frontend.chat_template.time"


def test_memory_is_bounded_whatever_builds_it() -> None:
    """A list of 4 Mi references to one 4 Mi-character string passes every size check (32 MiB);
    printing it would build 16 TiB. The child's address-space limit ends it as a MemoryError."""
    template = "{{ ['x' * 4000000] * 4000000 }}"
    rule, _ = _refused(template, max_seconds=60)
    assert rule == "frontend.chat_template.output"


def test_without_fork_the_render_runs_in_process_with_the_same_checks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The fallback where `os.fork` is missing: the size checks are the same, and the clock is
    checked on every template line (it cannot interrupt one long C call; module docstring)."""
    monkeypatch.delattr(os, "fork")
    assert render_chat(CHATML, MESSAGES).startswith("<|im_start|>user\nhi")
    assert _refused("{{ 7 ** 100000 }}")[0] == "frontend.chat_template.output"
    loops = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    assert _refused(loops, max_seconds=0.3)[0] == "frontend.chat_template.time"
