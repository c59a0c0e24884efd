"""The "From the notes to the code" map (docs/notes_map.py): the equation tags of seqlab's docstrings are found
in every chapter, each resolves by its qualified name to the object it is written on, the page renders them, no
docstring cites the notes by file name any more, and a broken tag fails (as the site build then must)."""

from __future__ import annotations

import importlib.util
import re
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load_notes_map():
    spec = importlib.util.spec_from_file_location("notes_map", ROOT / "docs" / "notes_map.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


notes_map = _load_notes_map()


@pytest.fixture(scope="module")
def tags():
    return notes_map.collect()


def test_tags_cover_every_chapter_in_syllabus_order(tags):
    assert len(tags) >= 40
    chapters = [t.chapter for t in tags]
    assert set(chapters) == set(notes_map.CHAPTERS), "a chapter of the syllabus has no tagged equation"
    order = [notes_map.CHAPTERS.index(c) for c in chapters]
    assert order == sorted(order)
    for t in tags:
        assert t.latex and "$" not in t.latex and t.what, t
        assert t.section in t.chapter.sections
    assert any(t.beyond for t in tags) and not all(t.beyond for t in tags)
    crf = [t for t in tags if t.section == "Sequence labelling › Linear-chain CRF"]
    assert {t.name for t in crf} >= {"seqlab.nn.crf.CRF.log_partition", "seqlab.nn.crf.CRF.decode"}
    assert all(t.beyond for t in crf)


def test_every_name_resolves_to_the_object_that_carries_the_tag(tags):
    for t in tags:
        obj = notes_map.resolve(t.name)
        doc = obj.__doc__ if not isinstance(obj, property) else obj.fget.__doc__
        found = notes_map.parse(doc, t.name)
        assert (t.section, t.latex, t.what, t.beyond) in found, t.name
        assert t.module == t.name[: len(t.module)] and obj.__module__ == t.module


def test_the_page_has_a_row_per_tag_with_a_cross_reference(tags):
    page = notes_map.render()
    headings = [line for line in page.splitlines() if line.startswith("## ")]
    assert headings == [f"## {i}. {c.title}" for i, c in enumerate(notes_map.CHAPTERS, 1)]
    rows = [line for line in page.splitlines() if line.startswith("| ") and "][" in line]
    assert len(rows) == len(tags)
    for row, t in zip(rows, tags):
        assert row.endswith(f"[`{t.short}`][{t.name}] |") and t.name.endswith(t.short.split(".", 1)[1])
        cells = re.split(r"(?<!\\)\|", row)[1:-1]  # a bare | in a cell would break the table
        assert len(cells) == 3, row
        assert cells[1].strip().startswith(f"${t.latex[:10]}")
    assert "$$" not in page


def test_no_docstring_cites_the_notes_by_file_name():
    cited = [f"{p.relative_to(ROOT)}:{n}" for p in sorted((ROOT / "seqlab").rglob("*.py"))
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"\bseeds?\s+0\d\d\b", line, re.IGNORECASE)]
    assert cited == []


GOOD = '''
    def f():
        r"""Summary.

        !!! equation "Time series › Autoregressive models"
            $x_t = b + w x_{t-1}$: AR(1), a
            constant plus the last value.

        !!! equation "Sequence labelling › Linear-chain CRF (beyond the notes)"
            $\\log Z$: the partition function."""
'''

BROKEN = {
    "not resolving": ('''
        def f():
            r"""Summary.

            !!! equation "Time series › Autoregressive models"
                $x_t$: a value."""
        f.__qualname__ = "g"
    ''', "does not resolve"),
    "nested": ('''
        def f():
            def inner():
                r"""Summary.

                !!! equation "Time series › Autoregressive models"
                    $x_t$: a value."""
            return inner
    ''', "where no qualified name reaches it"),
    "private": ('''
        def _f():
            r"""Summary.

            !!! equation "Time series › Autoregressive models"
                $x_t$: a value."""
    ''', "public names"),
    "unknown section": ('''
        def f():
            r"""Summary.

            !!! equation "Time series › Moving averages"
                $x_t$: a value."""
    ''', "unknown section"),
    "no equation": ('''
        def f():
            r"""Summary.

            !!! equation "Time series › Autoregressive models"
                the next value."""
    ''', "LaTeX"),
    "no blank line": ('''
        def f():
            r"""Summary.
            !!! equation "Time series › Autoregressive models"
                $x_t$: a value."""
    ''', "blank line"),
    "indented": ('''
        def f():
            r"""Summary.

            Args:
                !!! equation "Time series › Autoregressive models"
                    $x_t$: a value."""
    ''', "margin"),
    "module docstring": ('''
        r"""A module.

        !!! equation "Time series › Autoregressive models"
            $x_t$: a value.
        """
    ''', "module docstring"),
}


def _package(tmp_path, monkeypatch, name: str, source: str) -> str:
    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text("")
    (tmp_path / name / "m.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    for module in (name, f"{name}.m"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    return name


def test_a_good_tag_is_collected(tmp_path, monkeypatch):
    package = _package(tmp_path, monkeypatch, "notes_map_good", GOOD)
    found = notes_map.collect(package)
    assert [(t.section, t.latex, t.what, t.beyond, t.name) for t in found] == [
        ("Time series › Autoregressive models", "x_t = b + w x_{t-1}", "AR(1), a constant plus the last value.",
         False, f"{package}.m.f"),
        ("Sequence labelling › Linear-chain CRF", r"\log Z", "the partition function.", True, f"{package}.m.f"),
    ]


@pytest.mark.parametrize("case", BROKEN)
def test_a_broken_tag_raises(tmp_path, monkeypatch, case):
    source, message = BROKEN[case]
    package = _package(tmp_path, monkeypatch, "notes_map_" + case.replace(" ", "_"), source)
    with pytest.raises(notes_map.TagError, match=message):
        notes_map.collect(package)
