"""The integer codes Python passes to the C kernels are the ones fast/csrc declares.

The C sources are the one source of these numbers (they are what gets compiled); the Python
tables that mirror them by hand (MODES, KINDS, QUANTIZED, the block sizes, the wf_matrix struct)
are checked here against the enumerators parsed out of fast/csrc, so editing one side alone fails.
Checking rather than generating keeps the kernels plain C with no generated header and keeps the
Python tables literal; the parse needs no compiler, so it also runs where the kernels cannot build.
"""

from __future__ import annotations

import ctypes
import re

import pytest

from weightfile.fast._native import (
    CSRC,
    WfMatrix,
    WfNfMatrix,
    WfQ35Attention,
    WfQ35Gdn,
    WfQ35Layer,
    WfQ35Products,
)
from weightfile.fast.codecs.vqf._native import MODES
from weightfile.fast.numerics.matrix import KINDS, QUANTIZED
from weightfile.fast.qwen35.matrix import NF_KINDS
from weightfile.spec.codecs.vqf.blocks import QK, block_q4_0, block_q8_0
from weightfile.spec.codecs.vqf.registry import CODECS
from weightfile.spec.numerics.constants import QBLOCK, SUM_LANES

ENUM = re.compile(r"\benum\s*\{([^}]*)\}\s*;")
ENUMERATOR = re.compile(r"^\s*([A-Z_][A-Z0-9_]*)\s*=\s*(.+?)\s*$")


def c_enums(filename: str) -> dict[str, int]:
    """Every `NAME = value` of the anonymous enums in fast/csrc/<filename> (comments dropped)."""
    text = re.sub(r"/\*.*?\*/", "", (CSRC / filename).read_text(), flags=re.S)
    found: dict[str, int] = {}
    for body in ENUM.findall(text):
        for item in body.split(","):
            m = ENUMERATOR.match(item)
            if m:
                found[m.group(1)] = c_int(m.group(2))
    return found


def c_int(value: str) -> int:
    """An enumerator's value: an integer literal or a shift of two (`1 << 18`)."""
    if "<<" in value:
        a, b = value.split("<<")
        return int(a, 0) << int(b, 0)
    return int(value, 0)


def with_prefix(enums: dict[str, int], prefix: str) -> dict[str, int]:
    return {k.removeprefix(prefix): v for k, v in enums.items() if k.startswith(prefix)}


def test_encoder_modes_are_the_c_mode_enum() -> None:
    """fast/codecs/vqf/_native.MODES == vqf_codecs.c MODE_*: the quantisers branch on them."""
    c = with_prefix(c_enums("vqf_codecs.c"), "MODE_")
    assert {name.upper(): code for name, code in MODES.items()} == c


#: The wf_kernels.h weight kind of each on-disk block record (spec/vqf.md §q8-0, §q4-0).
KIND_OF_BLOCK = {id(block_q8_0): "Q8", id(block_q4_0): "Q4"}


def expected_kind(base: str) -> str:
    """The WF_W_* kind a base codec's blocks are read as: Q8 for every 34-byte block codec."""
    block = CODECS[base].block
    return KIND_OF_BLOCK[id(block)] if block is not None else base.upper()


def test_matrix_kinds_are_the_c_weight_kind_enum() -> None:
    """fast/numerics/matrix.KINDS gives every untiled codec the WF_W_* value of its block record."""
    c = with_prefix(c_enums("wf_kernels.h"), "WF_W_")
    bases = {codec.base for codec in CODECS.values()}
    assert set(KINDS) == bases  # every base codec a matrix can carry has a kind
    assert {base: c[expected_kind(base)] for base in bases} == KINDS
    assert set(QUANTIZED) == {c["Q8"], c["Q4"]}


@pytest.mark.parametrize(
    ("filename", "name", "value"),
    [
        ("wf_kernels.h", "WF_QK", QBLOCK),
        ("wf_kernels.h", "WF_LANES", SUM_LANES),
        ("vqf_codecs.c", "QK", QK),
        ("qmatvec.c", "Q8_BLOCK", block_q8_0.sizeof()),
        ("qmatvec.c", "Q4_BLOCK", block_q4_0.sizeof()),
    ],
)
def test_block_constants_are_the_spec_numbers(filename: str, name: str, value: int) -> None:
    assert c_enums(filename)[name] == value


C_TYPES = {"const uint8_t *": ctypes.c_void_p, "int64_t": ctypes.c_int64, "int32_t": ctypes.c_int32}


def test_wf_matrix_struct_has_the_ctypes_fields_in_order() -> None:
    """_native.WfMatrix declares wf_kernels.h's wf_matrix field for field (names, types, order)."""
    text = (CSRC / "wf_kernels.h").read_text()
    body = re.search(r"typedef struct \{(.*?)\} wf_matrix;", text, flags=re.S)
    assert body is not None
    fields: list[tuple[str, type]] = []
    for decl in body.group(1).split(";"):
        m = re.match(r"\s*(const uint8_t \*|int64_t|int32_t)\s*(.+)", decl.strip())
        if m:
            fields += [(n.strip(), C_TYPES[m.group(1).strip()]) for n in m.group(2).split(",")]
    assert fields == list(WfMatrix._fields_)


def test_wf_nf_matrix_struct_has_the_ctypes_fields_in_order() -> None:
    """_native.WfNfMatrix declares wf_kernels.h's wf_nf_matrix field for field (names, types,
    order)."""
    text = (CSRC / "wf_kernels.h").read_text()
    body = re.search(r"typedef struct \{([^}]*)\} wf_nf_matrix;", text)
    assert body is not None
    types = {**C_TYPES, "const float *": ctypes.c_void_p}
    fields: list[tuple[str, type]] = []
    for decl in body.group(1).split(";"):
        m = re.match(r"\s*(const uint8_t \*|const float \*|int64_t|int32_t)\s*(.+)", decl.strip())
        if m:
            fields += [(n.strip(), types[m.group(1).strip()]) for n in m.group(2).split(",")]
    assert fields == list(WfNfMatrix._fields_)


SCALARS = {"int64_t": ctypes.c_int64, "int32_t": ctypes.c_int32, "float": ctypes.c_float}
DECL = re.compile(r"(?:const\s+)?(\w+)\s*((?:\*\s*(?:const\s*)?)*)(.+)")


def c_struct_fields(filename: str, name: str) -> list[tuple[str, type]]:
    """The fields of `typedef struct {...} name;` in fast/csrc/<filename> as ctypes (name, type)
    pairs: any pointer a c_void_p (the Python side passes addresses)."""
    text = re.sub(r"/\*.*?\*/", "", (CSRC / filename).read_text(), flags=re.S)
    body = re.search(r"typedef struct \{([^}]*)\} " + name + ";", text)
    assert body is not None, name
    fields: list[tuple[str, type]] = []
    for decl in filter(None, (d.strip() for d in body.group(1).split(";"))):
        m = DECL.fullmatch(decl)
        assert m is not None, decl
        for n in m.group(3).split(","):
            pointer = bool(m.group(2)) or n.strip().startswith("*")
            kind = ctypes.c_void_p if pointer else SCALARS[m.group(1)]
            fields.append((n.strip().lstrip("*").strip(), kind))
    return fields


@pytest.mark.parametrize(
    ("filename", "name", "struct"),
    [
        ("qwen35_layer.h", "wf_q35_gdn", WfQ35Gdn),
        ("qwen35_layer.h", "wf_q35_attention", WfQ35Attention),
        ("qwen35_layer.h", "wf_q35_products", WfQ35Products),
        ("qwen35_forward.c", "wf_q35_layer", WfQ35Layer),
    ],
)
def test_qwen35_layer_structs_have_the_ctypes_fields_in_order(
    filename: str, name: str, struct: type
) -> None:
    """_native.WfQ35Gdn / WfQ35Attention / WfQ35Products / WfQ35Layer declare the Qwen3.5 layer
    structs of fast/csrc field for field (names, types, order): the C reads them by offset."""
    assert c_struct_fields(filename, name) == list(struct._fields_)


def test_ninfer_kinds_are_the_c_kind_enum() -> None:
    """fast/qwen35/matrix.NF_KINDS == wf_kernels.h WF_NF_*: the row decoder branches on them."""
    c = with_prefix(c_enums("wf_kernels.h"), "WF_NF_")
    assert {name.upper(): code for name, code in NF_KINDS.items()} == c
