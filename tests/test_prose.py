"""The ``pyprose`` embedded corpus (seqlab.data.prose): the code and table filters on handmade text, docstrings
read without importing, the document order, the manifest, missing modules, and its record in a prepared folder."""

from __future__ import annotations

import hashlib
import platform
import sys

import pytest

from seqlab.data import lm_tokens, prose, sources
from seqlab.data.sources import list_sources, read_text, split_points, split_text
from seqlab.tasks import resolve

PROSE = ("The default behaviour (see below) is to return the value: a copy, never a view.\n"
         "Each call reads the file once; errors are raised as OSError.\n\n"
         "A second paragraph, with a list:\n\n"
         "* the first item;\n"
         "* the second item.")


def test_prose_is_kept_intact():
    assert prose.strip_code(PROSE) == PROSE


def test_doctest_block_and_its_output_go():
    text = "Add two numbers.\n\n>>> x = 1\n>>> x + 1\n2\n...   more output\n\nThe result is an int."
    assert prose.strip_code(text) == "Add two numbers.\n\nThe result is an int."
    indented = "Example:\n\n    >>> f()\n    'out'\n\nDone here."
    assert prose.strip_code(indented) == "Example:\n\nDone here."


def test_literal_blocks_after_double_colon_and_code_directives_go():
    text = "Use it like this::\n\n    foo(1)\n\n    bar = 2\n\nThen it works."
    assert prose.strip_code(text) == "Use it like this:\n\nThen it works."
    assert prose.strip_code("Run it ::\n\n    $ seqlab demo\n\nIt trains.") == "Run it\n\nIt trains."
    assert prose.strip_code("Before.\n\n::\n\n    code\n\nAfter.") == "Before.\n\nAfter."
    directive = "Before.\n\n.. code-block:: python\n\n   x = compute(1)\n   y = x\n\nAfter."
    assert prose.strip_code(directive) == "Before.\n\nAfter."
    assert prose.strip_code(directive.replace("code-block", "sourcecode")) == "Before.\n\nAfter."


def test_grid_table_goes():
    text = ("Before the table.\n\n+-------+---------+\n| Name  | Meaning |\n+=======+=========+\n"
            "| a     | first   |\n|       | letter  |\n+-------+---------+\n\nAfter the table.")
    assert prose.strip_code(text) == "Before the table.\n\nAfter the table."


def test_simple_table_goes():
    text = ("Before the table.\n\n=====  ======\nA      not A\n=====  ======\nFalse  True\nTrue   False\n"
            "=====  ======\n\nAfter the table.")
    assert prose.strip_code(text) == "Before the table.\n\nAfter the table."


def test_symbol_lines_and_blank_runs_go():
    assert prose.strip_code("Title\n=====\n\n\n\n\nText  \n--------\nmore text.") == "Title\n\nText\nmore text."


def test_code_paragraphs_go_signature_lines_stay():
    text = "Usage:\n    p = HTMLParser()\n    p.feed(data)\n\nhas_option(section)\n    Return whether it exists."
    assert prose.strip_code(text) == "has_option(section)\n    Return whether it exists."


def test_module_document_is_docstrings_in_source_order_filtered():
    source = '''"""The module says what it is for, in one long sentence."""

class Thing:
    """A thing that holds a value and returns it when asked.

    >>> Thing().get()
    1
    """

    def get(self):
        """Return self."""

    def same(self):
        """The module says what it is for, in one long sentence."""

if True:
    def later():
        """A function defined inside an if block, found all the same."""
'''
    assert prose.module_document(source) == ("The module says what it is for, in one long sentence.\n\n"
                                             "A thing that holds a value and returns it when asked.\n\n"
                                             "A function defined inside an if block, found all the same.")


def test_documents_are_ordered_by_the_sha1_of_their_key():
    keys = ["topic:assert", "module:argparse", "topic:with", "module:json"]
    assert prose.ordered_keys(keys) == sorted(keys, key=lambda k: hashlib.sha1(k.encode()).hexdigest())


def test_pyprose_is_deterministic_large_prose_and_its_manifest_counts_match_the_text():
    text, manifest = prose.pyprose_text(), prose.pyprose_manifest()
    assert read_text("pyprose") == text
    assert prose.build_prose() == prose._pyprose()  # built again from scratch: identical to the cached build
    assert manifest["python"] == platform.python_version() and manifest["modules"] == len(prose.PYPROSE_MODULES)
    assert manifest["chars"] == len(text) >= 1_500_000
    assert manifest["pydoc_topics_chars"] + manifest["docstring_chars"] == manifest["chars"]
    assert manifest["sha256"] == hashlib.sha256(text.encode()).hexdigest()
    assert set(manifest["missing"]) <= set(prose.PYPROSE_MODULES) and not manifest["unreadable"]
    assert manifest["docstring_chars"] > 3 * manifest["pydoc_topics_chars"]
    for part in split_text(text):  # each split holds topics and docstrings: the Python keyword, a class name
        assert "statement" in part and "Return" in part


def test_pydocs_test_split_is_the_start_of_pyprose_test_split_and_never_in_its_train_split():
    pydocs, pyprose = (split_text(read_text(name)) for name in ("pydocs", "pyprose"))
    assert pyprose[2].startswith(pydocs[2]) and pyprose[1].startswith(pydocs[1])
    assert pyprose[0].startswith(pydocs[0])
    assert pydocs[2][:2000] not in pyprose[0]


@pytest.mark.parametrize("fractions", [(0.9, 0.05, 0.05), (0.8, 0.1, 0.1), (0.5, 0.5, 0.0)])
def test_interleaved_splits_cut_exactly_between_the_parts(fractions):
    first, second = "a" * 1003, "b" * 2711
    text = prose.interleave_splits(first, second, fractions)
    a, b = split_points(len(text), fractions)
    a1, b1 = split_points(len(first), fractions)
    assert text[:a] == first[:a1] + "b" * (a - a1) and set(text[a:b]) <= {"a", "b"}
    assert text[a:b].count("a") == b1 - a1 and text[b:].count("a") == len(first) - b1
    assert text[b:].startswith(first[b1:])


def test_modules_are_read_never_imported(monkeypatch):
    for name in ("this", "antigravity"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    built = prose.build_prose(("this", "antigravity", "argparse"))
    assert "this" not in sys.modules and "antigravity" not in sys.modules
    assert built.manifest["missing"] == [] and "ArgumentParser" in built.text


def test_a_listed_module_that_python_lacks_is_recorded_as_missing(monkeypatch):
    monkeypatch.setattr(prose, "PYPROSE_MODULES", ("argparse", "no_such_module_in_any_python"))
    manifest = prose.build_prose().manifest
    assert manifest["modules"] == 2 and manifest["missing"] == ["no_such_module_in_any_python"]
    assert manifest["docstring_chars"] > 1000


def test_listed_by_seqlab_data_list():
    rows = {r["name"]: r for r in list_sources()}
    assert rows["pyprose"]["kind"] == "embedded" and "docstrings" in rows["pyprose"]["description"]


def test_prepared_lm_data_records_the_manifest(tmp_path, monkeypatch):
    small = prose.Prose("Some prose to train on, " * 400, {"name": "pyprose", "python": "3.x", "missing": ["cgi"]})
    monkeypatch.setattr(prose, "_pyprose", lambda: small)
    cfg = resolve("lm-char", ['data.source="pyprose"'])
    manifest = lm_tokens.prepare_tokens(cfg, tmp_path / "p")
    (source,) = manifest["sources"]
    assert source["embedded"] == "pyprose" and source["corpus"] == small.manifest
    assert source["chars"] == len(small.text)


@pytest.mark.parametrize("name", ["pydocs", "pystdlib"])
def test_other_embedded_corpora_record_no_manifest(tmp_path, name, monkeypatch):
    monkeypatch.setitem(sources._EMBEDDED_TEXT, name, lambda: "Short text. " * 300)
    manifest = lm_tokens.prepare_tokens(resolve("lm-char", [f'data.source="{name}"']), tmp_path / "p")
    assert manifest["sources"][0]["embedded"] == name and "corpus" not in manifest["sources"][0]
