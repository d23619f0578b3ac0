"""The documents agree with the code: spliced tables are current, every rule id is raised."""

import re
import subprocess
import sys
from pathlib import Path

from weightfile.spec.vqf.rules import RETIRED, RULES

ROOT = Path(__file__).resolve().parents[2]
#: Where rule ids are raised: the oracle, and the importers (vqf.import.*), which are API-side
#: (format-level in weightfile/convert/, per family in weightfile/families/).
RAISING = ("ref", "weightfile/convert", "weightfile/families")


def implementation_source() -> str:
    return "\n".join(p.read_text() for d in RAISING for p in sorted((ROOT / d).rglob("*.py")))


def test_spliced_tables_match_the_schemas():
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "splice_tables.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr


def test_every_vqf_rule_id_is_raised_by_the_implementation():
    source = implementation_source()
    raised = set(re.findall(r'"(vqf\.[a-z0-9_.]+)"', source))
    assert set(RULES) - raised == set(RETIRED)  # retired ids keep their v1 cases, raised by none


def test_every_rule_id_the_implementation_raises_is_in_the_table():
    source = implementation_source()
    raised = set(re.findall(r'"(vqf\.[a-z_]+\.[a-z0-9_]+)"', source))
    assert raised - set(RULES) == set()


# --- spec/vqf.md keeps the fact sheet's numbering (issue 12), which the rule table and the corpus
# publish; the code cites the headings by id (tests/docs/test_citations.py) ---

VQF_DOC = ROOT / "spec" / "vqf.md"

#: Subsections per section, as the VQF fact sheet numbers them: section 2 has 2.1-2.5, and so on.
#: (7.7 converter options, 9.2 the engine-defaults check and 9.3 opening files safely are
#: weightfile's own: issues 20 and 14.)
_SUBSECTIONS = {0: 0, 1: 0, 2: 5, 3: 5, 4: 3, 5: 9, 6: 6, 7: 7, 8: 0, 9: 3, 10: 0}
#: Every numbered section, in document order.
VQF_SECTIONS = [
    n for s, k in _SUBSECTIONS.items() for n in (str(s), *(f"{s}.{i}" for i in range(1, k + 1)))
]


def vqf_doc_without_spliced_tables() -> str:
    """spec/vqf.md without the generated table bodies (their cells are the tables' business)."""
    text = VQF_DOC.read_text()
    return re.sub(r"<!-- table:([\w-]+) -->\n.*?<!-- /table:\1 -->", "", text, flags=re.S)


def vqf_headings() -> dict[str, str]:
    """Section number -> heading text, from `## N. Title` and `### N.M Title` lines."""
    found = re.findall(r"^##+ (\d+(?:\.\d+)?)\.? (.+)$", VQF_DOC.read_text(), flags=re.M)
    return dict(found)


def vqf_section_body(number: str) -> str:
    """The text under heading `number` up to the next heading of any level."""
    text = VQF_DOC.read_text()
    m = re.search(rf"^##+ {re.escape(number)}\.? .*?$(.*?)(?=^##|\Z)", text, flags=re.M | re.S)
    assert m, f"no section {number}"
    return m[1]


def test_vqf_doc_has_every_fact_sheet_section_as_a_heading():
    headings = vqf_headings()
    assert [n for n in headings if n in VQF_SECTIONS] == VQF_SECTIONS
    assert set(headings) == set(VQF_SECTIONS)


def test_vqf_doc_numbers_the_steps_the_rule_table_cites():
    # Rules cite (spec/vqf.md §legacy-header, step N) and (spec/vqf.md §loader-chain, step N): the
    # lists must keep these numbers.
    def steps(number: str) -> list[int]:
        return [int(n) for n in re.findall(r"^(\d+)\. ", vqf_section_body(number), flags=re.M)]

    assert steps("2.4") == [1, 2, 3, 4]
    assert steps("9") == list(range(1, 15))


def test_vqf_doc_flag_table_matches_the_flag_enum():
    from weightfile.spec.vqf.flags import VQFFlag

    rows = re.findall(r"^\| (\d+) \| (0x[0-9a-f]{3}) \| (\w+) \|", vqf_section_body("2.5"), re.M)
    assert [(int(b), int(v, 16), n) for b, v, n in rows] == [
        (f.value.bit_length() - 1, f.value, f.name) for f in VQFFlag
    ]


def test_vqf_doc_qtype_table_matches_the_registry():
    from weightfile.spec.vqf.qtypes import QType

    rows = re.findall(r"^\| (0x0[0-9]) \| (\w+)", vqf_section_body("3.2"), re.M)
    assert [(int(c, 16), n) for c, n in rows] == [(q.value, q.name) for q in QType]


def test_vqf_doc_codec_table_matches_the_codec_registry():
    from weightfile.spec.codecs.vqf.registry import CODECS

    rows = re.findall(
        r"^\| `(\w+)` \| (0x0\d) \| (\d+) B / [^|]*\| (\S+) \| (\S+) \| ([^|]+) \|",
        vqf_section_body("5"),
        re.M,
    )
    assert [r[0] for r in rows] == list(CODECS)
    for name, qtype, size, rows_mod, cols_mod, modes in rows:
        c = CODECS[name]
        tiled = c.tiling is not None
        assert int(qtype, 16) == c.qtype, name
        assert int(size) == (c.tiling.group_block_bytes if tiled else c.block_bytes), name
        divisors = (str(c.row_group), str(c.cols_multiple)) if tiled else ("–", "–")
        assert (rows_mod, cols_mod) == divisors, name
        if modes.startswith("as "):
            assert CODECS[modes.split()[1]].modes == c.modes, name
        else:
            assert tuple(modes.strip().split(", ")) == c.modes, name


def test_every_rule_id_the_vqf_doc_names_is_a_rule():
    from weightfile.spec.codecs.vqf.registry import CODECS

    named = set(re.findall(r"`(vqf\.[a-z0-9_]+\.[a-z0-9_.]+)`", vqf_doc_without_spliced_tables()))
    codec = {r for r in named if r.startswith("vqf.codec.")}
    assert named - codec - set(RULES) == set()
    # vqf.codec.<name>.<rule> needs a registered layout; vqf.codec.<what> are codec_for's own.
    for r in codec:
        parts = r.split(".")
        assert len(parts) == 3 or parts[2] in CODECS, r
    # spec/vqf.md §encodings's payload-rule table lists exactly the rules the codecs raise,
    # rule(<codec>, "<rule>").
    documented = re.findall(
        r"^\| `([a-z_]+)` \| (?:Malformed|Invalid|Unsupported) \|", vqf_section_body("5"), re.M
    )
    # Wherever the codecs live, they take `rule` from the VQF codec registry.
    users = [p for p in (ROOT / "ref").rglob("*.py") if "spec.codecs.vqf.registry" in p.read_text()]
    source = "\n".join(p.read_text() for p in [*users, ROOT / "spec/codecs/vqf/registry.py"])
    raised = set(re.findall(r'rule\([A-Za-z_.]+, "([a-z_]+)"\)', source))
    assert sorted(documented) == sorted(raised)
