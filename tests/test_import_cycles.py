"""No import cycle among the modules of the `weightfile` package, function-level imports included,
and no call cycle among the C files of fast/csrc.

A cycle hidden inside a function (an import moved "below" to dodge the circle at load time) is
still a cycle for a reader and for a tool: neither module can be read or tested alone. The graph is
built from the AST of every module of every folder setup.py maps into `weightfile` (relative
imports resolved, `from pkg import sub` counted as an edge to the submodule, as import-linter
does), and its strongly connected components must all be single modules.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The folders setup.py maps onto import names (setup.py PACKAGE_ROOTS).
PACKAGE_ROOTS = {
    "weightfile": "weightfile",
    "weightfile.spec": "spec",
    "weightfile.ref": "ref",
    "weightfile.fast": "fast",
    "weightfile.conformance": "conformance",
}


def module_files() -> dict[str, Path]:
    """Every module of the package by dotted name (`pkg/__init__.py` names the package)."""
    out: dict[str, Path] = {}
    for prefix, folder in PACKAGE_ROOTS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT / folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            if any(p.startswith(".") or "-" in p for p in parts):
                continue
            out[".".join([prefix, *parts])] = path
    return out


def _base(module: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute module a `from ... import` names, its relative dots resolved."""
    if node.level == 0:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    anchor = package[: len(package) - (node.level - 1)]
    return ".".join(anchor + ([node.module] if node.module else []))


def imports_of(module: str, path: Path, known: Mapping[str, Path]) -> set[str]:
    """The package's modules `module` imports anywhere in its body (top level or in a function)."""
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _base(module, path, node)
            for alias in node.names:
                # `from pkg import sub` imports the submodule pkg.sub, `from m import name` m.
                sub = f"{base}.{alias.name}"
                targets.add(sub if sub in known else base)
    found = set()
    for name in targets:
        # `import a.b.c` of a non-module attribute path: the longest known module prefix.
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name and name != module:
            found.add(name)
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports."""
    known = module_files()
    return {m: imports_of(m, p, known) for m, p in known.items()}


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(root: str) -> None:
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        out.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return out


def test_the_walker_reads_function_level_and_relative_imports(tmp_path):
    """An import inside a function counts, and `from . import x` / `from ..a import b` resolve."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    path = pkg / "sub" / "m.py"
    path.write_text(
        "from . import sibling\nfrom ..top import name\ndef f():\n    import pkg.late.deep\n"
    )
    known = dict.fromkeys(["pkg", "pkg.sub", "pkg.sub.sibling", "pkg.top", "pkg.late"], path)
    assert imports_of("pkg.sub.m", path, known) == {"pkg.sub.sibling", "pkg.top", "pkg.late"}


def test_cycles_are_found():
    """A toy graph with a two-module and a three-module circle yields both, and nothing else."""
    toy = {"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"e"}, "e": {"c", "a"}, "f": {"a"}}
    assert sorted(cycles(toy)) == [["a", "b"], ["c", "d", "e"]]


def c_call_graph(csrc: Path) -> dict[str, set[str]]:
    """C file -> the C files defining the non-static `wf_*` functions it calls."""
    texts = {f.name: re.sub(r"/\*.*?\*/", "", f.read_text(), flags=re.S) for f in csrc.glob("*.c")}
    defined: dict[str, set[str]] = {}
    for name, text in texts.items():
        for m in C_DEFINITION.finditer(text):
            defined.setdefault(m.group(1), set()).add(name)
    return {
        name: {f for called in C_CALL.findall(text) for f in defined.get(called, ()) if f != name}
        for name, text in texts.items()
    }


# A definition at the start of a line (not static): type, name, parameters, then the body's brace.
C_DEFINITION = re.compile(r"^(?!static)[A-Za-z_][\w \*]*?\b(wf_\w+)\s*\([^;{]*\)\s*\{", re.M)
C_CALL = re.compile(r"\b(wf_\w+)\s*\(")


def test_the_c_call_graph_sees_calls_across_files(tmp_path):
    (tmp_path / "a.c").write_text("int wf_a(void) { return wf_b(); }\n")
    (tmp_path / "b.c").write_text(
        "/* wf_a() */\nstatic int h(void);\nint wf_b(void) { return 1; }\n"
    )
    (tmp_path / "c.c").write_text(
        "const int *wf_c(int x,\n             int y) {\n  return wf_a();\n}\n"
    )
    assert c_call_graph(tmp_path) == {"a.c": {"b.c"}, "b.c": set(), "c.c": {"a.c"}}


def test_no_call_cycle_among_the_c_files():
    """CPU detection (cpu.c), the block fetch and pool (wf_common.c) and the scalar exp
    (scalar_ops.c) sit below the kernels that use them."""
    found = cycles(c_call_graph(ROOT / "fast" / "csrc"))
    assert not found, "call cycles among fast/csrc files:\n" + "\n".join(
        " <-> ".join(c) for c in found
    )


def test_no_import_cycle():
    found = cycles(import_graph())
    assert not found, "import cycles (function-level imports count):\n" + "\n".join(
        " <-> ".join(c) for c in found
    )
