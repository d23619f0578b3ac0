"""Chat templates rendered in jinja2's immutable sandbox, within bounds.

A chat template ships inside a model's files, so it is untrusted input: it is rendered with
`ImmutableSandboxedEnvironment` (no attribute starting with "_", no calls to unsafe methods, no
mutation of lists and dicts), and an attempt to reach an unsafe attribute is an error here
rather than the sandbox's default silent empty string. Without a template from the model the
ChatML format Qwen3 uses is the default.

Rendering is bounded too (spec/ninfer3.md §component), each bound a typed error:
* recursion: a macro calling itself ends in `frontend.chat_template.recursion`;
* size: every arithmetic operator (`+ - * / // % **`), the `~` concatenation, every call and
  every filter a template makes are checked before they run, so a string or list longer than
  `max_output` or an integer of more than `MAX_INT_DIGITS` digits is refused before it is built,
  and the output stops at `max_output` characters (`frontend.chat_template.output`). Integers
  are bounded far below strings because their arithmetic is not linear: one floor division of two
  million-digit integers is seconds of CPU in a single C call;
* CPU and memory, enforced by the kernel rather than by checks in Python: where the platform can
  fork, the template is compiled and rendered in a child process with an `ITIMER_PROF` timer of
  `max_seconds` of CPU (its SIGPROF ends the child whatever C code it is in), `RLIMIT_CPU` one
  second later as a backstop, and `RLIMIT_AS` at the child's address space plus `MAX_MEMORY`
  bytes (an allocation past it is a MemoryError). A child ended by its timer is
  `frontend.chat_template.time`; one that runs out of memory is `frontend.chat_template.output`.
  The parent also stops waiting after `10 * max_seconds + 10` s of wall-clock time (a backstop
  for a child the scheduler starves, never reached by the CPU timer's work). Without `os.fork`
  the render runs in-process and a trace hook checks the clock on every template line instead,
  which cannot interrupt one long C call.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import select
import signal
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

from jinja2 import TemplateError, Undefined
from jinja2.compiler import CodeGenerator, Frame
from jinja2.exceptions import SecurityError
from jinja2.nodes import Concat, EvalContext
from jinja2.runtime import markup_join, str_join
from jinja2.sandbox import ImmutableSandboxedEnvironment

from weightfile.spec.errors import InvalidError

CHAT_TEMPLATE_SUFFIX = ".chat_template.jinja"

#: ChatML, the Qwen3 conversation format (written here, not copied from a model's files).
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


#: Default bounds: a real chat template renders a prompt of kilobytes in milliseconds.
MAX_OUTPUT = 4 << 20  # characters of output, and of any one string or list a template builds
MAX_SECONDS = 5.0  # of CPU
#: Digits of any integer a template builds: Python's own default limit for int <-> str.
MAX_INT_DIGITS = 4300
#: Bytes of address space a render may add to the process it was forked from.
MAX_MEMORY = 1 << 30


class _Bound(Exception):
    """A bound was hit: carries the rule id the caller raises (module docstring)."""

    def __init__(self, rule: str, detail: str) -> None:
        super().__init__(detail)
        self.rule = rule


def _digits(value: int) -> int:
    """Decimal digits of an integer, from its bit length (exact to within one digit)."""
    return max(1, math.ceil(abs(value).bit_length() * 0.30103))  # log10(2)


def _length(value: Any) -> int:
    """How long a value is for the size bound: characters or items (an integer: 1)."""
    if isinstance(value, str | bytes | list | tuple | dict):
        return len(value)
    return 1


class _Generator(CodeGenerator):
    """Jinja's code generator, but `a ~ b` goes through `checked_join` (module docstring)."""

    def visit_Concat(self, node: Concat, frame: Frame) -> None:
        self.write("environment.checked_join((")
        for piece in node.nodes:
            self.visit(piece, frame)
            self.write(", ")
        self.write("), context.eval_ctx)")


class StrictSandbox(ImmutableSandboxedEnvironment):
    """The immutable sandbox, but touching an unsafe attribute raises at once, and values are
    size-checked before they are built (module docstring)."""

    intercepted_binops = frozenset({"+", "-", "*", "/", "//", "%", "**"})
    code_generator_class = _Generator

    def __init__(
        self,
        *args: Any,
        max_output: int = MAX_OUTPUT,
        max_int_digits: int = MAX_INT_DIGITS,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.max_output = max_output
        self.max_int_digits = max_int_digits
        # filters are called directly by the compiled template, not through `call`
        self.filters = {name: self._guarded(f) for name, f in self.filters.items()}

    def _check(self, value: Any) -> Any:
        """`value`, or the output rule when it is over a bound."""
        if isinstance(value, int) and not isinstance(value, bool):
            if _digits(value) > self.max_int_digits:
                self._refuse(f"an integer of more than {self.max_int_digits} digits")
        elif _length(value) > self.max_output:
            self._refuse("a value")
        return value

    def _check_sizes(self, values: Iterable[Any]) -> None:
        """Size arguments (an integer larger than the bound) are refused before a call."""
        for a in values:
            if isinstance(a, int) and a > self.max_output:
                self._refuse("a size argument")
            self._check(a)

    def _guarded(self, function: Any) -> Any:
        """`function` with `call`'s size checks on its arguments and result."""

        @functools.wraps(function)  # keeps jinja's pass_context / pass_environment marks
        def guarded(*args: Any, **kwargs: Any) -> Any:
            self._check_sizes((*args, *kwargs.values()))
            return self._check(function(*args, **kwargs))

        return guarded

    def checked_join(self, pieces: tuple[Any, ...], eval_ctx: EvalContext) -> str:
        """`a ~ b ~ ...`: each piece's text measured, the total refused before it is joined."""
        texts = [self._check(piece if isinstance(piece, str) else str(piece)) for piece in pieces]
        if sum(map(len, texts)) > self.max_output:
            self._refuse("a concatenation")
        return markup_join(pieces) if eval_ctx.autoescape else str_join(pieces)

    def wrap_str_format(self, value: Any) -> Any:
        """`'{:>99999999}'.format`: a width in the format string itself is checked here."""
        owner = getattr(value, "__self__", None)
        name = getattr(value, "__name__", "")
        is_format = isinstance(owner, str) and name in ("format", "format_map")
        if is_format and _widest(owner) > self.max_output:
            self._refuse("a format width")
        return super().wrap_str_format(value)

    def unsafe_undefined(self, obj: Any, attribute: str) -> Undefined:
        raise SecurityError(f"access to attribute {attribute!r} of {type(obj).__name__} is unsafe")

    def _refuse(self, what: str) -> NoReturn:
        raise _Bound("frontend.chat_template.output", f"{what} exceeds the bound")

    def _precheck(self, operator: str, left: Any, right: Any) -> None:
        """The cost of `left operator right` bounded from its operands (module docstring)."""
        limit, digits = self.max_output, self.max_int_digits
        self._check(left)
        self._check(right)
        ints = all(isinstance(v, int) for v in (left, right))
        if operator == "+" and not ints and _length(left) + _length(right) > limit:
            self._refuse("a concatenation")
        if operator == "*" and ints and _digits(left) + _digits(right) > digits:
            self._refuse("an integer product")
        if operator == "*" and isinstance(left, int) != isinstance(right, int):
            n = right if isinstance(right, int) else left
            if _length(left if n is right else right) * max(n, 0) > limit:
                self._refuse("a repeated value")
        # a negative exponent gives a float, cheap to compute
        if operator == "**" and ints and abs(left) > 1 and _digits(left) * right > digits:
            self._refuse("an integer power")
        if operator == "%" and isinstance(left, str):
            args = right if isinstance(right, tuple) else (right,)
            if any(isinstance(a, int) and a > limit for a in args) or _widest(left) > limit:
                self._refuse("a formatted string")

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        """Every arithmetic operator, refused when its operands or result are too big."""
        self._precheck(operator, left, right)
        return self._check(super().call_binop(context, operator, left, right))

    def call(self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        """Every call a template makes (methods, globals, macros): an integer argument larger
        than the bound (`'x'.ljust(2**40)`, `'{:>99999999}'.format`) is refused first."""
        self._check_sizes((*args, *kwargs.values()))
        return self._check(super().call(__context, __obj, *args, **kwargs))


def _widest(text: Any) -> int:
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
    every line checks the clock (the in-process fallback, module docstring)."""

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


def _environment(max_output: int) -> StrictSandbox:
    env = StrictSandbox(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=["jinja2.ext.loopcontrols"],
        max_output=max_output,
    )
    env.globals["raise_exception"] = raise_exception
    return env


def _render(template: str, variables: dict[str, Any], max_output: int) -> str:
    """Compile and render, the output bounded; a bound is a `_Bound`."""
    compiled = _environment(max_output).from_string(template)
    pieces: list[str] = []
    length = 0
    for piece in compiled.generate(**variables):
        length += len(piece)
        if length > max_output:
            raise _Bound("frontend.chat_template.output", f"output exceeds {max_output}")
        pieces.append(piece)
    return "".join(pieces)


def _outcome(render: Callable[[], str]) -> tuple[str, str]:
    """("", text) for a rendered prompt, or (rule, detail) for a refusal."""
    try:
        return "", render()
    except _Bound as exc:
        return exc.rule, str(exc)
    except RecursionError:
        return "frontend.chat_template.recursion", "the template recursed too deeply"
    except MemoryError:
        return "frontend.chat_template.output", "the template ran out of memory"
    except SecurityError as exc:
        return "frontend.chat_template.unsafe", str(exc)
    except (TemplateError, TypeError, ValueError, LookupError, ArithmeticError) as exc:
        # a template's own mistakes (1 + "a", a missing key) are bad input too
        return "frontend.chat_template.error", str(exc)


def _in_process(
    template: str, variables: dict[str, Any], bounds: tuple[int, float]
) -> tuple[str, str]:
    """The fallback without fork: the clock checked on every template line."""
    previous = sys.gettrace()
    sys.settrace(_Deadline(bounds[1]))
    try:
        return _outcome(lambda: _render(template, variables, bounds[0]))
    finally:
        sys.settrace(previous)


@functools.cache
def _warm() -> None:
    """Import everything jinja loads lazily before the first fork, so the child imports nothing
    (another thread may hold the import lock at the fork)."""
    _render("{% for m in messages %}{{ m ~ 1 }}{% endfor %}", {"messages": [1]}, 100)


def _limit_child(max_seconds: float) -> None:
    """The child's kernel-enforced bounds (module docstring)."""
    import resource

    signal.signal(signal.SIGPROF, signal.SIG_DFL)  # a profiler's handler would survive the fork
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's; it kills the child
    signal.setitimer(signal.ITIMER_PROF, max_seconds)
    cpu = math.ceil(max_seconds) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    with contextlib.suppress(OSError, ValueError):  # no /proc: no memory bound
        pages = int(Path("/proc/self/statm").read_text().split()[0])
        ceiling = pages * os.sysconf("SC_PAGE_SIZE") + MAX_MEMORY
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard == resource.RLIM_INFINITY or ceiling < hard:
            resource.setrlimit(resource.RLIMIT_AS, (ceiling, ceiling))


def _child(fd: int, template: str, variables: dict[str, Any], bounds: tuple[int, float]) -> None:
    """The forked child: render under its limits, send the JSON outcome, exit (never return)."""
    status = 1
    try:
        _limit_child(bounds[1])
        outcome = _outcome(lambda: _render(template, variables, bounds[0]))
        signal.setitimer(signal.ITIMER_PROF, 0)
        data = memoryview(json.dumps(outcome).encode())
        while data:
            data = data[os.write(fd, data) :]
        status = 0
    finally:
        os._exit(status)


def _forked(template: str, variables: dict[str, Any], bounds: tuple[int, float]) -> tuple[str, str]:
    """Render in a forked child and read its outcome (module docstring)."""
    _warm()
    read, write = os.pipe()
    with warnings.catch_warnings():  # the child runs only jinja, whose imports _warm made
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        os.close(read)
        _child(write, template, variables, bounds)
    os.close(write)
    chunks: list[bytes] = []
    end = time.monotonic() + 10 * bounds[1] + 10
    try:
        while (left := end - time.monotonic()) > 0:
            if select.select([read], [], [], left)[0]:
                if not (chunk := os.read(read, 1 << 20)):
                    break
                chunks.append(chunk)
        else:
            os.kill(pid, signal.SIGKILL)
    except BaseException:  # Ctrl-C while waiting: the child goes too
        os.kill(pid, signal.SIGKILL)
        raise
    finally:
        os.close(read)
        _, status = os.waitpid(pid, 0)
    timed_out = signal.SIGPROF, signal.SIGXCPU, signal.SIGKILL
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) in timed_out:
        return "frontend.chat_template.time", f"rendering ran past {bounds[1]} s of CPU"
    if status != 0:
        return "frontend.chat_template.error", f"the rendering process failed ({status:#x})"
    rule, text = json.loads(b"".join(chunks))
    return rule, text


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
    values = {
        "messages": [dict(m) for m in messages],
        "add_generation_prompt": add_generation_prompt,
        **variables,
    }
    way = _forked if hasattr(os, "fork") else _in_process
    rule, text = way(template, values, (max_output, max_seconds))
    if rule:
        raise InvalidError(rule, text, path="chat_template")
    return text
