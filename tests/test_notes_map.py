"""The "From the notes to the code" map (docs/notes_map.py): the equation tags of seqlab's docstrings are found
in every chapter, each resolves by its qualified name to the object it is written on, the page renders them, no
docstring cites the notes by file name any more, and a broken tag fails (as the site build then must). A tag's
declared default or option is checked against the config dataclasses and the presets (a planted wrong one
fails), and the departures page ("Notation and departures from the notes") has its rows, each on an importable
object, linked from every tutorial that has one."""

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
        assert (t.section, t.latex, t.what, t.beyond, t.declarations) in found, t.name
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


# --- declared defaults and options --------------------------------------------------------------------------


def test_the_tags_the_issue_fixed_state_the_default_they_compute(tags):
    by_name: dict[str, list] = {}
    for t in tags:
        by_name.setdefault(t.name, []).append(t)

    def declared(name: str) -> set[tuple[str, str, object]]:
        return {(d.kind, f"{d.section}.{d.key}", d.value) for t in by_name[name] for d in t.declarations}

    assert ("default", "model.norm", "pre") in declared("seqlab.models.transformer.EncoderLayer")
    assert ("option", "model.norm", "sublayer") in declared("seqlab.models.transformer.EncoderLayer")
    assert ("default", "model.scale_embeddings", False) in declared("seqlab.models.transformer.Embedding")
    assert ("default", "model.pooling", "mean") in declared("seqlab.models.pretrained_heads.SequenceClassifier")
    assert ("default", "model.ic", "aic") in declared("seqlab.models.autoregressive.select_order")
    embedding = [t for t in by_name["seqlab.models.transformer.Embedding"] if not t.declarations[0].value]
    assert embedding[0].latex == "\\mathrm{embed}(X) = E X + P"
    assert "2 (p + 1)" in by_name["seqlab.models.autoregressive.select_order"][0].latex
    assert "column $j$" in by_name["seqlab.models.recurrent.RecurrentEncoder"][0].what
    assert "x_{\\le t}" in " ".join(t.what for t in by_name["seqlab.training.trainer.Trainer.train_step"])
    attention = " ".join(t.what for t in by_name["seqlab.nn.attention.attention_equations"])
    assert "keys scaled" not in attention and "applies to the query" in attention
    assert [t for t in tags if t.name == "seqlab.models.glove.cooccurrence"][0].beyond
    page = notes_map.render()
    assert 'Default: `model.norm = "pre"`' in page and "`mt-transformer` (`true`)" in page


def test_a_declaration_is_parsed():
    d = notes_map.parse_declaration('default: model.scale_embeddings = false for lm/transformer, '
                                    'translate/transformer; presets: mt-transformer = true')
    assert (d.kind, d.section, d.key, d.value) == ("default", "model", "scale_embeddings", False)
    assert d.scope == ("lm/transformer", "translate/transformer") and d.presets == (("mt-transformer", True),)
    o = notes_map.parse_declaration('option: model.positions = "learned"; presets: lm-bpe, lm-char')
    assert o.presets == (("lm-bpe", "learned"), ("lm-char", "learned"))
    for bad in ("default: norm = 'pre'", "default: model.norm = pre", 'default: model.norm = "pre"; presets: lm-char',
                "default: train.grad_clip = 1.0 for lm/transformer"):
        with pytest.raises(notes_map.TagError):
            notes_map.parse_declaration(bad)


def _tag_with(line: str) -> str:
    return f'''
        def f():
            r"""Summary.

            !!! equation "Transformer › Encoder and decoder"
                $T = X + f(X)$: a layer.
                {line}
            """
    '''


PLANTED = {
    "wrong default": ('default: model.norm = "post"',
                      r'states the default model\.norm = "post", but .*TransformerLMConfig \(lm/transformer\) has '
                      r'model\.norm = "pre"'),
    "a preset departs unlisted": ("default: model.scale_embeddings = false",
                                  "mt-transformer = true"),
    "a listed preset that does not depart": ('default: model.norm = "pre"; presets: lm-char = "post"',
                                             "wrong or missing: lm-char"),
    "a train default a preset overrides": ("default: train.grad_clip = 1.0", "ner-bilstm = 5.0"),
    "wrong default in a narrowed scope": ('default: model.pooling = "mean" for classify/lstm',
                                          'has model.pooling = "last"'),
    "a key in no config": ("default: model.no_such_key = 1", "no model config has a field 'no_such_key'"),
    "a scope without the key": ('default: model.norm = "pre" for lm/lstm', "has no field 'norm'"),
    "an option that is refused": ('option: model.norm = "middle"', "is not an option"),
    "an option that is the default": ('option: model.norm = "pre"', "is the default"),
    "an option a preset uses unlisted": ('option: model.activation = "relu"', "mt-transformer"),
}


@pytest.mark.parametrize("case", PLANTED)
def test_a_planted_wrong_declaration_raises(tmp_path, monkeypatch, case):
    line, message = PLANTED[case]
    package = _package(tmp_path, monkeypatch, "notes_map_decl_" + case.replace(" ", "_"), _tag_with(line))
    with pytest.raises(notes_map.TagError, match=message):
        notes_map.collect(package)


def test_a_true_declaration_is_collected_and_shown(tmp_path, monkeypatch):
    line = 'default: model.scale_embeddings = false; presets: mt-transformer = true'
    package = _package(tmp_path, monkeypatch, "notes_map_decl_good", _tag_with(line))
    (tag,) = notes_map.collect(package)
    assert tag.what == "a layer." and tag.declarations[0].text == line
    assert tag.declarations[0].markdown() == ("Default: `model.scale_embeddings = false`; presets that set another "
                                              "value: `mt-transformer` (`true`)")


# --- the departures page ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def departures():
    return notes_map.collect_departures()


def test_the_departures_page_has_a_row_for_each_item(departures):
    assert len(departures) >= 15
    assert {d.kind for d in departures} == {"notation", "departure", "slip"}
    page = notes_map.render_departures()
    rows = [line for line in page.splitlines() if line.startswith("| ") and "][seqlab." in line]
    assert len(rows) == len(departures) >= 15
    for row, d in zip(rows, departures):
        assert row.endswith(f"[`{d.short}`][{d.name}] |")
        assert len(re.split(r"(?<!\\)\|", row)[1:-1]) == 5, row
    headings = [line for line in page.splitlines() if line.startswith("## ")]
    assert headings == [f"## {i}. {c.title}" for i, c in enumerate(notes_map.CHAPTERS, 1)]
    # the issue's items, each a row beside its code
    named = {d.name for d in departures}
    for name in ("seqlab.models.glove.cooccurrence", "seqlab.models.glove_torch.GloVe",
                 "seqlab.models.word2vec_torch.SkipGram",
                 "seqlab.metrics.bleu.compute_bleu", "seqlab.nn.positions.sinusoidal_table", "seqlab.views.explain.trace",
                 "seqlab.nn.feedforward.FeedForward", "seqlab.models.transformer.EncoderLayer",
                 "seqlab.models.transformer.Embedding", "seqlab.nn.attention.MultiHeadAttention",
                 "seqlab.nn.additive.AdditiveAttention", "seqlab.models.word2vec_tables.huffman_tree",
                 "seqlab.nn.recurrent.gru_step", "seqlab.models.recurrent.RecurrentEncoder",
                 "seqlab.tasks.lm.LanguageModel.score", "seqlab.decoding.decode.generate",
                 "seqlab.tasks.tag_output.loss_sum", "seqlab.nn.recurrent.RecurrentStack"):
        assert name in named, f"no departure on {name}"
    assert "### The Transformer presets against the notes" in page
    assert '| [`lm-char`](reference/presets.md#lm-char) | **`"pre"`** | **`"learned"`** | **`"gelu"`**' in page
    assert ('| [`mt-transformer`](reference/presets.md#mt-transformer) | **`"pre"`** | `"sinusoidal"` | `"relu"` '
            '| `true` |') in page


def test_every_departure_resolves_to_the_importable_object_that_carries_it(departures):
    for d in departures:
        obj = notes_map.resolve(d.name)
        doc = obj.__doc__ if not isinstance(obj, property) else obj.fget.__doc__
        assert (d.section, d.kind, d.notes, d.ours, d.declarations) in notes_map.parse_departures(doc, d.name)
        assert obj.__module__ == d.module and d.section in d.chapter.sections


def test_every_tutorial_with_departures_links_to_its_chapter_on_the_page(departures):
    docs = ROOT / "docs"
    for number, chapter in enumerate(notes_map.CHAPTERS, 1):
        text = (docs / chapter.tutorial).read_text(encoding="utf-8")
        if any(d.chapter is chapter for d in departures):
            assert f"../departures.md#{notes_map.chapter_anchor(number, chapter)}" in text, chapter.tutorial


BROKEN_DEPARTURES = {
    "no seqlab line": ('''
        def f():
            r"""Summary.

            !!! departure "Transformer › Embedding"
                notes: $E X \\sqrt{d}$."""
    ''', "then a line 'seqlab:"),
    "unknown section": ('''
        def f():
            r"""Summary.

            !!! departure "Transformer › Dropout (notation)"
                notes: none.
                seqlab: some."""
    ''', "unknown section"),
    "module docstring": ('''
        r"""A module.

        !!! departure "Transformer › Embedding"
            notes: a.
            seqlab: b.
        """
    ''', "module docstring"),
    "wrong default": ('''
        def f():
            r"""Summary.

            !!! departure "Transformer › Embedding"
                notes: a.
                seqlab: b.
                default: model.scale_embeddings = true"""
    ''', "states the default"),
}


@pytest.mark.parametrize("case", BROKEN_DEPARTURES)
def test_a_broken_departure_raises(tmp_path, monkeypatch, case):
    source, message = BROKEN_DEPARTURES[case]
    package = _package(tmp_path, monkeypatch, "notes_map_dep_" + case.replace(" ", "_"), source)
    with pytest.raises(notes_map.TagError, match=message):
        notes_map.collect_departures(package)


def test_a_good_departure_is_collected(tmp_path, monkeypatch):
    package = _package(tmp_path, monkeypatch, "notes_map_dep_good", '''
        def f():
            r"""Summary.

            !!! departure "Transformer › Embedding (slip in the notes)"
                notes: $E X$ twice,
                wrapped.
                seqlab: once."""
    ''')
    (d,) = notes_map.collect_departures(package)
    assert (d.section, d.kind, d.notes, d.ours, d.name) == (
        "Transformer › Embedding", "slip", "$E X$ twice, wrapped.", "once.", f"{package}.m.f")
