"""Chat templates rendered in jinja2's immutable sandbox, within bounds.

A chat template ships inside a model's files, so it is untrusted input: it is rendered with
`ImmutableSandboxedEnvironment` (no attribute starting with "_", no calls to unsafe methods, no
mutation of lists and dicts), and an attempt to reach an unsafe attribute is an error here
rather than the sandbox's default silent empty string. Without a template from the model the
ChatML format Qwen3 uses is the default.

Rendering is bounded too (spec/ninfer3.md §component), each bound a typed error:
* recursion: a macro calling itself ends in `frontend.chat_template.recursion`;
* size: `*`, `**`, `%` and every call a template makes are checked before they run, so a
  string, list or integer larger than `max_output` is refused before it is built, and the output
  stops at `max_output` characters (`frontend.chat_template.output`);
* time: a trace hook on the template's own frames checks the clock on every template line, so
  loops that run past `max_seconds` stop there (`frontend.chat_template.time`).
"""

from __future__ import annotations

import functools
import math
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

from jinja2 import TemplateError, Undefined
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from weightfile.spec.errors import InvalidError

CHAT_TEMPLATE_SUFFIX = ".chat_template.jinja"

#: ChatML, the Qwen3 conversation format (written here, not copied from a model's files).
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


#: Default bounds: a real chat template renders a prompt of kilobytes in milliseconds.
MAX_OUTPUT = 4 << 20  # characters of output, and of any one value a template builds
MAX_SECONDS = 5.0


class _Bound(Exception):
    """A bound was hit: carries the rule id the caller raises (module docstring)."""

    def __init__(self, rule: str, detail: str) -> None:
        super().__init__(detail)
        self.rule = rule


def _size(value: Any) -> int:
    """How big a value is for the size bound: length, or digits of an integer."""
    if isinstance(value, bool):
        return 1
    if isinstance(value, int):
        return max(1, math.ceil(abs(value).bit_length() * 0.302))  # log10(2)
    if isinstance(value, str | bytes | list | tuple):
        return len(value)
    return 1


class StrictSandbox(ImmutableSandboxedEnvironment):
    """The immutable sandbox, but touching an unsafe attribute raises at once, and values are
    size-checked before they are built (module docstring)."""

    intercepted_binops = frozenset({"*", "**", "%"})

    def __init__(self, *args: Any, max_output: int = MAX_OUTPUT, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_output = max_output
        # filters are called directly by the compiled template, not through `call`
        self.filters = {name: self._guarded(f) for name, f in self.filters.items()}

    def _guarded(self, function: Any) -> Any:
        """`function` with `call`'s size checks on its arguments and result."""

        @functools.wraps(function)  # keeps jinja's pass_context / pass_environment marks
        def guarded(*args: Any, **kwargs: Any) -> Any:
            if any(isinstance(a, int) and a > self.max_output for a in (*args, *kwargs.values())):
                self._refuse("a filter's size argument")
            result = function(*args, **kwargs)
            if _size(result) > self.max_output:
                self._refuse("a value")
            return result

        return guarded

    def wrap_str_format(self, value: Any) -> Any:
        """`'{:>99999999}'.format`: a width in the format string itself is checked here."""
        owner = getattr(value, "__self__", None)
        name = getattr(value, "__name__", "")
        is_format = isinstance(owner, str) and name in ("format", "format_map")
        if is_format and _digits(owner) > self.max_output:
            self._refuse("a format width")
        return super().wrap_str_format(value)

    def unsafe_undefined(self, obj: Any, attribute: str) -> Undefined:
        raise SecurityError(f"access to attribute {attribute!r} of {type(obj).__name__} is unsafe")

    def _refuse(self, what: str) -> NoReturn:
        raise _Bound("frontend.chat_template.output", f"{what} exceeds {self.max_output}")

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        """`a * n`, `a ** b` and `a % b`, refused when the result would be too big."""
        limit = self.max_output
        if operator == "*" and isinstance(left, int) != isinstance(right, int):
            n = right if isinstance(right, int) else left
            if _size(left if n is right else right) * max(n, 0) > limit:
                self._refuse("a repeated value")
        power = operator == "**" and isinstance(left, int) and isinstance(right, int)
        if power and abs(left) > 1 and _size(left) * right > limit:  # a negative exponent: small
            self._refuse("an integer power")
        if operator == "%" and isinstance(left, str):
            args = right if isinstance(right, tuple) else (right,)
            if any(isinstance(a, int) and a > limit for a in args) or _digits(left) > limit:
                self._refuse("a formatted string")
        result = super().call_binop(context, operator, left, right)
        if _size(result) > limit:
            self._refuse("a value")
        return result

    def call(self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        """Every call a template makes (methods, globals, macros): an integer argument larger
        than the bound (`'x'.ljust(2**40)`, `'{:>99999999}'.format`) is refused first."""
        values = (*args, *kwargs.values())
        if any(isinstance(a, int) and a > self.max_output for a in values):
            self._refuse("a call's size argument")
        result = super().call(__context, __obj, *args, **kwargs)
        if _size(result) > self.max_output:
            self._refuse("a value")
        return result


def _digits(text: Any) -> int:
    """The largest decimal number in a format string: its widths and precisions."""
    if not isinstance(text, str):
        return 0
    best = run = 0
    for ch in text:
        run = run * 10 + int(ch) if ch.isdigit() else 0
        best = max(best, run)
    return best


class _Deadline:
    """A trace hook on the template's frames only (their code is compiled from "<template>"):
    every line checks the clock (module docstring)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def __call__(self, frame: FrameType, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename != "<template>":
            return None
        return self._line

    def _line(self, frame: FrameType, event: str, arg: Any) -> Any:
        if time.monotonic() > self.end:
            raise _Bound("frontend.chat_template.time", f"rendering ran past {self.seconds} s")
        return self._line


def raise_exception(message: str) -> NoReturn:
    """The helper Hugging Face templates call to reject a conversation."""
    raise TemplateError(message)


def chat_template_path(model: str | os.PathLike[str]) -> Path:
    """`<model>.chat_template.jinja`, where `weightfile import` puts the checkpoint's template."""
    return Path(str(model) + CHAT_TEMPLATE_SUFFIX)


def render_chat(
    template: str,
    messages: Sequence[Mapping[str, str]],
    *,
    add_generation_prompt: bool = True,
    max_output: int = MAX_OUTPUT,
    max_seconds: float = MAX_SECONDS,
    **variables: Any,
) -> str:
    """The prompt text of `messages`; a template that breaks the sandbox or a bound is an
    InvalidError (module docstring)."""
    env = StrictSandbox(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=["jinja2.ext.loopcontrols"],
        max_output=max_output,
    )
    env.globals["raise_exception"] = raise_exception
    previous = sys.gettrace()
    try:
        compiled = env.from_string(template)
        pieces: list[str] = []
        length = 0
        sys.settrace(_Deadline(max_seconds))
        try:
            for piece in compiled.generate(
                messages=[dict(m) for m in messages],
                add_generation_prompt=add_generation_prompt,
                **variables,
            ):
                length += len(piece)
                if length > max_output:
                    raise _Bound("frontend.chat_template.output", f"output exceeds {max_output}")
                pieces.append(piece)
        finally:
            sys.settrace(previous)
        return "".join(pieces)
    except _Bound as exc:
        raise InvalidError(exc.rule, str(exc), path="chat_template") from None
    except RecursionError:
        raise InvalidError(
            "frontend.chat_template.recursion",
            "the template recursed too deeply",
            path="chat_template",
        ) from None
    except MemoryError:
        raise InvalidError(
            "frontend.chat_template.output",
            "the template ran out of memory",
            path="chat_template",
        ) from None
    except SecurityError as exc:
        raise InvalidError(
            "frontend.chat_template.unsafe", str(exc), path="chat_template"
        ) from None
    except (TemplateError, TypeError, ValueError, LookupError, ArithmeticError) as exc:
        # a template's own mistakes (1 + "a", a missing key) are bad input too
        raise InvalidError("frontend.chat_template.error", str(exc), path="chat_template") from None
