"""Chat templates rendered in jinja2's immutable sandbox.

A chat template ships inside a model's files, so it is untrusted input: it is rendered with
`ImmutableSandboxedEnvironment` (no attribute starting with "_", no calls to unsafe methods, no
mutation of lists and dicts), and an attempt to reach an unsafe attribute is an error here
rather than the sandbox's default silent empty string. Without a template from the model the
ChatML format Qwen3 uses is the default.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
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


class StrictSandbox(ImmutableSandboxedEnvironment):
    """The immutable sandbox, but touching an unsafe attribute raises at once."""

    def unsafe_undefined(self, obj: Any, attribute: str) -> Undefined:
        raise SecurityError(f"access to attribute {attribute!r} of {type(obj).__name__} is unsafe")


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
    **variables: Any,
) -> str:
    """The prompt text of `messages`; a template that breaks the sandbox is an InvalidError."""
    env = StrictSandbox(
        trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"]
    )
    env.globals["raise_exception"] = raise_exception
    try:
        compiled = env.from_string(template)
        return compiled.render(
            messages=[dict(m) for m in messages],
            add_generation_prompt=add_generation_prompt,
            **variables,
        )
    except SecurityError as exc:
        raise InvalidError(
            "frontend.chat_template.unsafe", str(exc), path="chat_template"
        ) from None
    except (TemplateError, TypeError, ValueError, LookupError, ArithmeticError) as exc:
        # a template's own mistakes (1 + "a", a missing key) are bad input too
        raise InvalidError("frontend.chat_template.error", str(exc), path="chat_template") from None
