"""Short functions where it matters (issue 27 item 5).

The oracle (`ref/`) reads like a textbook that follows the spec, and `fast/` beside it: no function
there is over 60 lines. Elsewhere in the Python (`weightfile/`, `conformance/`) only the long
converter planners named below may be. The C conformance adapter, written from the specs alone,
keeps its steps short too.

The measure: a Python function's lines are `end_lineno - lineno + 1` of its `def` in the AST, so
they include the signature, the docstring and any nested function (which is also measured on its
own); decorators are not counted. A C function's lines run from the first line of its signature to
its closing brace.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 60

#: Every function in these trees is short, the board models (ref/qwen3/board/, fast/qwen3/board/)
#: included.
SHORT = ("ref", "fast")
#: Elsewhere these (by name, wherever their module lives) may stay long: the converter planners,
#: one table-driven step per tensor kind, read best whole.
ELSEWHERE = ("weightfile", "conformance")
LONG_PLANNERS = {"import_gguf_moe", "plan_tensors", "tensor_jobs"}
ADAPTER = ROOT / "conformance" / "adapters" / "c" / "conform.c"


def python_functions(text: str) -> list[tuple[int, str, int]]:
    """(line, name, lines) of every function and method in a Python module, nested ones too."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found.append((node.lineno, node.name, node.end_lineno - node.lineno + 1))  # type: ignore[operator]
    return found


def long_functions(top: str) -> list[tuple[str, str, int]]:
    """(path:line, name, lines) of every function over LIMIT lines under `top`."""
    found = []
    for path in sorted((ROOT / top).rglob("*.py")):
        for line, name, lines in python_functions(path.read_text(encoding="utf-8")):
            if lines > LIMIT:
                found.append((f"{path.relative_to(ROOT).as_posix()}:{line}", name, lines))
    return found


def c_functions(text: str) -> list[tuple[int, str, int]]:
    """(line, name, lines) of each top-level function of a C file written with the signature at
    column 0 and the closing brace alone at column 0 (the adapter's style)."""
    lines = text.split("\n")
    code = [re.sub(r"/\*.*?\*/|//.*", "", line).rstrip() for line in lines]  # comments out
    found = []
    i = 0
    while i < len(lines):
        line = code[i]
        starts = line[:1].isalpha() and "(" in line and not line.endswith((";", "}"))
        if not starts or "=" in line.split("(")[0]:
            i += 1
            continue
        end = i
        while not code[end].endswith("{"):
            end += 1
        while lines[end] != "}":
            end += 1
        name = re.search(r"(\w+)\s*\(", line)
        found.append((i + 1, name.group(1) if name else "?", end - i + 1))
        i = end + 1
    return found


def test_no_function_in_ref_or_fast_is_over_60_lines() -> None:
    offenders = [row for top in SHORT for row in long_functions(top)]
    assert not offenders, "split these into named steps:\n" + "\n".join(
        f"  {where} {name}: {lines} lines" for where, name, lines in offenders
    )


def test_only_the_converter_planners_are_long_elsewhere() -> None:
    offenders = [
        row for top in ELSEWHERE for row in long_functions(top) if row[1] not in LONG_PLANNERS
    ]
    assert not offenders, "split these into named steps:\n" + "\n".join(
        f"  {where} {name}: {lines} lines" for where, name, lines in offenders
    )


def test_no_function_of_the_c_adapter_is_over_60_lines() -> None:
    functions = c_functions(ADAPTER.read_text(encoding="utf-8"))
    names = {name for _, name, _ in functions}
    assert {"main", "check_vqf", "check_ninfer3", "jvalue"} <= names  # the scan sees them
    offenders = [row for row in functions if row[2] > LIMIT]
    assert not offenders, "split these into named steps:\n" + "\n".join(
        f"  conform.c:{line} {name}: {n} lines" for line, name, n in offenders
    )


def test_the_measures_see_a_long_function() -> None:
    """The scans are not blind: a function one line over the limit is measured as such, its
    signature, docstring and nested function included."""
    body = "\n".join(f"    x{i} = {i}" for i in range(LIMIT - 5))
    text = f'def f(\n    a,\n):\n    """Doc."""\n    def g():\n        pass\n{body}\n'
    assert python_functions(text) == [(1, "f", LIMIT + 1), (5, "g", 2)]
    c_body = "\n".join(f"    x += {i};" for i in range(LIMIT - 2))
    c_text = (
        f"static int f(int x,\n          int y) {{ /* a comment */\n{c_body}\n}}\n"
        "static int g(void);\nstatic int h(void) { return 0; }\nint main(void) {\n}\n"
    )
    assert c_functions(c_text) == [(1, "f", LIMIT + 1), (LIMIT + 4, "main", 2)]
