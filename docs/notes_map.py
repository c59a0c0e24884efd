r"""The "From the notes to the code" page, generated from the equation tags in seqlab's docstrings.

A tag is a markdown admonition in a docstring, after a blank line, in one form everywhere::

    !!! equation "Recurrent neural networks › Long short-term memory"
        $c_t = f_t \odot c_{t-1} + i_t \odot \tilde{c}_t$: the long-term memory: the forget gate keeps part
        of it, the input gate adds the candidate.

- the title names the notes' section as "Topic › Section" (one of :data:`CHAPTERS`' sections), with
  " (beyond the notes)" appended when the notes do not have that equation;
- the one indented paragraph below it starts with the equation in LaTeX between single dollars, then a colon and
  what it is (it may wrap onto more lines of the same indentation). Docstrings holding LaTeX are raw strings.

The API reference renders a tag as an "equation" admonition titled with the section, whatever docstring style
griffe parses (the admonition is plain markdown, not a docstring section). A function or class may carry several
tags; the tagged object is the implementing function, and its qualified name (``module.QualName``) is what the
page links, as an mkdocstrings cross-reference. Tags on a module docstring, on private names (which the API
reference does not render) or on anything that does not import back by its qualified name raise
:class:`TagError`, so the site build fails.

``render()`` returns the page's markdown (docs/hooks.py writes it as notes-to-code.md); ``collect()`` returns
the tags, in the syllabus order of :data:`CHAPTERS`.
"""

from __future__ import annotations

import importlib
import inspect
import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

PACKAGE = "seqlab"
BEYOND = " (beyond the notes)"
TAG = '!!! equation "'
_HEADER = re.compile(r'^(?P<indent>[ \t]*)!!! equation "(?P<topic>[^"]+)"[ \t]*$')
_BODY = re.compile(r"^\$(?P<latex>[^$]+)\$:\s+(?P<what>\S.*)$", re.S)


@dataclass(frozen=True)
class Chapter:
    title: str  # the chapter's heading on the page, in the syllabus order
    tutorial: str  # its tutorial page, relative to docs/
    sections: tuple[str, ...]  # its sections ("Topic › Section"), in the order of the notes


# The notes' chapters in the syllabus order, and the sections a tag may name. A tag naming another section
# raises: add the section here first (that keeps the names of the page and the docstrings one vocabulary).
CHAPTERS: tuple[Chapter, ...] = (
    Chapter("Time series and AR(p)", "tutorials/01-time-series-ar.md", (
        "Time series › Autoregressive models",
        "Time series › Sliding windows",
        "Time series › Least-squares fit",
        "Time series › Forecasting",
        "Time series › Neural forecasters",
    )),
    Chapter("Tokens and vocabularies", "tutorials/02-tokens-and-vocabularies.md", (
        "Tokens › Vocabulary",
        "Tokens › Padding",
        "Tokens › Next-token windows",
        "Tokens › Sub-word tokenisation",
    )),
    Chapter("Recurrent networks: RNN, GRU, LSTM", "tutorials/03-recurrent-networks.md", (
        "Recurrent neural networks › Elman RNN",
        "Recurrent neural networks › Gated recurrent unit",
        "Recurrent neural networks › Long short-term memory",
        "Recurrent neural networks › Bidirectional RNNs",
        "Recurrent neural networks › Deep RNNs",
        "Recurrent neural networks › Backpropagation through time",
        "Recurrent neural networks › Vanishing and exploding gradients",
        "Recurrent neural networks › Softmax and cross-entropy",
        "Recurrent neural networks › Language model loss",
        "Recurrent neural networks › Many to many",
        "Recurrent neural networks › Many to one",
        "Sequence labelling › Character features",
        "Sequence labelling › Linear-chain CRF",
    )),
    Chapter("Word embeddings", "tutorials/04-word-embeddings.md", (
        "Word embeddings › Embedding matrix",
        "Word embeddings › Skip-gram",
        "Word embeddings › Negative sampling",
        "Word embeddings › Hierarchical softmax",
        "Word embeddings › GloVe",
        "Word embeddings › Cosine similarity",
        "Word embeddings › Analogies",
        "Word embeddings › t-SNE map",
        "Word embeddings › Transfer learning",
    )),
    Chapter("Sequence to sequence: attention and BLEU", "tutorials/05-seq2seq-attention.md", (
        "Sequence to sequence › Encoder-decoder",
        "Sequence to sequence › Bahdanau attention",
        "Sequence to sequence › Decoding",
        "Sequence to sequence › BLEU",
    )),
    Chapter("The Transformer", "tutorials/06-transformer.md", (
        "Transformer › Tensor notation",
        "Transformer › Self-attention",
        "Transformer › Scaled dot-product attention",
        "Transformer › Masked attention",
        "Transformer › Softmax",
        "Transformer › Multi-head attention",
        "Transformer › Positional encoding",
        "Transformer › Embedding",
        "Transformer › Feed-forward network",
        "Transformer › Layer norm",
        "Transformer › Residual connections",
        "Transformer › Encoder and decoder",
        "Transformer › Output layer",
        "Transformer › Worked example",
    )),
    Chapter("Pretrained encoders and fine-tuning", "tutorials/07-pretrained-encoders.md", (
        "Pretrained encoders › BERT",
        "Pretrained encoders › GPT-2",
        "Pretrained encoders › Fine-tuning",
    )),
)
_ORDER = {section: (c, s) for c, chapter in enumerate(CHAPTERS) for s, section in enumerate(chapter.sections)}


class TagError(Exception):
    """A tag that cannot be put on the page: malformed, naming an unknown section, or not resolving."""


@dataclass(frozen=True)
class Tag:
    section: str  # "Topic › Section", one of CHAPTERS' sections
    latex: str  # the equation, LaTeX without the dollars
    what: str  # what it is, one paragraph of markdown
    beyond: bool  # the notes do not have this equation
    name: str  # the implementing object's qualified name, e.g. "seqlab.nn.recurrent.lstm_step"
    module: str  # the module that defines it
    order: int  # position in the walk of its module (definition order), then in its docstring

    @property
    def chapter(self) -> Chapter:
        return CHAPTERS[_ORDER[self.section][0]]

    @property
    def short(self) -> str:
        """The name as the page shows it: the module's last part and the qualified name ("crf.CRF.decode"); the
        link itself is the full name."""
        return f"{self.module.rsplit('.', 1)[-1]}.{self.name[len(self.module) + 1:]}"


def parse(doc: str | None, where: str) -> list[tuple[str, str, str, bool]]:
    """The tags of a docstring as (section, latex, what, beyond); ``where`` names the object in errors."""
    lines = inspect.cleandoc(doc or "").splitlines()
    tags = []
    for i, line in enumerate(lines):
        m = _HEADER.match(line)
        if not m:
            continue
        if m["indent"]:
            raise TagError(f"{where}: an equation tag must start at the docstring's margin (markdown reads an "
                           f"admonition there only); line {line.strip()!r}")
        if i == 0 or lines[i - 1].strip():
            raise TagError(f"{where}: an equation tag needs a blank line before it (else markdown renders it as "
                           f"text); line {line.strip()!r}")
        body = []  # the indented lines right below the header
        for nxt in lines[i + 1:]:
            if not nxt[:1].isspace() or not nxt.strip():
                break
            body.append(nxt.strip())
        rest = lines[i + 1 + len(body):]
        if rest and not rest[0].strip() and next((x for x in rest if x.strip()), "x")[:1].isspace():
            raise TagError(f"{where}: the tag {m['topic']!r} has more than one paragraph; keep it to one")
        b = _BODY.match(" ".join(body))
        if not b:
            raise TagError(f"{where}: the tag {m['topic']!r} must continue with one indented paragraph "
                           "'$LaTeX$: what it is'")
        section = m["topic"].removesuffix(BEYOND)
        if section not in _ORDER:
            raise TagError(f"{where}: unknown section {section!r}; use one of notes_map.CHAPTERS' sections "
                           "(or add it there)")
        tags.append((section, b["latex"].strip(), b["what"].strip(), m["topic"].endswith(BEYOND)))
    return tags


def _private(qualname: str) -> bool:
    return any(part.startswith("_") for part in qualname.split("."))


def resolve(name: str) -> object:
    """The object a qualified name names: the longest importable module prefix, then attributes."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        try:
            obj = importlib.import_module(module)
        except ModuleNotFoundError as e:  # not a module (an attribute): try the shorter prefix
            if e.name is not None and not module.startswith(e.name):
                raise
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError as e:
            raise TagError(f"{name} does not resolve: {e}") from None
        return obj
    raise TagError(f"{name} does not resolve: no module of it imports")


def _members(module: ModuleType):
    """(object, the object its docstring is read from) for the functions and classes a module defines, and
    their methods, properties and nested classes, in definition order."""
    def walk(namespace: dict, owner: str):
        for value in namespace.values():
            doc_of = value
            if isinstance(value, (staticmethod, classmethod)):
                value = doc_of = value.__func__
            elif isinstance(value, property):
                doc_of = value
                value = value.fget
            if not (inspect.isfunction(value) or inspect.isclass(value) or hasattr(value, "__wrapped__")):
                continue
            if getattr(value, "__module__", None) != module.__name__:
                continue
            qualname = getattr(value, "__qualname__", "")
            if owner and not qualname.startswith(owner + "."):
                continue
            yield value, doc_of
            if inspect.isclass(value):
                yield from walk(vars(value), qualname)
    yield from walk(vars(module), "")


def _same(found: object, obj: object) -> bool:
    if found is obj or getattr(found, "__func__", None) is obj:
        return True
    return isinstance(found, property) and found.fget is obj


def _module_tags(module: ModuleType, source: str) -> list[Tag]:
    if parse(module.__doc__, module.__name__):
        raise TagError(f"{module.__name__}: a tag in the module docstring; put it on the implementing function "
                       "or class")
    tags, seen = [], set()
    for value, doc_of in _members(module):
        if id(value) in seen:
            continue
        seen.add(id(value))
        name = f"{module.__name__}.{value.__qualname__}"
        found = parse(doc_of.__doc__, name)
        if not found:
            continue
        if _private(value.__qualname__) or "<locals>" in value.__qualname__:
            raise TagError(f"{name}: tags go on public names (the API reference does not render this one)")
        if not _same(resolve(name), value):
            raise TagError(f"{name} does not resolve to the tagged object")
        for section, latex, what, beyond in found:
            tags.append(Tag(section, latex, what, beyond, name, module.__name__, len(tags)))
    in_source = sum(1 for line in source.splitlines() if _HEADER.match(line))
    if in_source != len(tags):
        raise TagError(f"{module.__name__}: {in_source} tags in the source but {len(tags)} on its public functions "
                       "and classes; a tag sits where no qualified name reaches it (a nested function, a comment, "
                       "a string that is not a docstring)")
    return tags


def collect(package: str = PACKAGE) -> list[Tag]:
    """Every tag of ``package``'s modules, in the order of :data:`CHAPTERS`' sections; within a section the
    notes' equations first, then those beyond the notes, each in module and definition order.

    Only the modules whose source holds a tag are imported. Raises :class:`TagError` on a tag that is
    malformed, names an unknown section, or does not resolve by its qualified name.
    """
    root = importlib.import_module(package)
    base = Path(root.__file__).parent
    tags: list[Tag] = []
    for path in sorted(base.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        if TAG not in source:
            continue
        parts = path.relative_to(base).with_suffix("").parts
        name = ".".join((package, *parts[:-1])) if parts[-1] == "__init__" else ".".join((package, *parts))
        tags += _module_tags(importlib.import_module(name), source)
    return sorted(tags, key=lambda t: (_ORDER[t.section], t.beyond, t.module, t.order))


def _math(latex: str) -> str:
    """Inline math for a table cell: a bare | would split the cell, so it becomes \\vert (\\| \\Vert)."""
    latex = latex.replace(r"\|", r"\Vert ").replace("|", r"\vert ")
    return f"${latex}$"


def _cell(text: str) -> str:
    text = " ".join(text.split()).replace("|", r"\|")
    return text[:1].upper() + text[1:]


def render(package: str = PACKAGE) -> str:
    """The markdown of docs/notes-to-code.md."""
    tags = collect(package)
    out = [
        "# From the notes to the code",
        "",
        "Every equation of the lecture notes that seqlab implements, chapter by chapter in the order of the "
        "syllabus, with the function or class that computes it (module and name; the link goes to its entry in "
        "the [Python API reference](reference/api.md), where its source is shown).",
        "",
        f"This page is generated from the code: each row is an *equation* admonition of a docstring, and the "
        f"site's build fails when a tagged name no longer resolves. Rows marked *beyond the notes* are "
        f"equations the notes do not have (the reference papers' details, such as the CRF of the tagger). "
        f"{len(tags)} equations, {len({t.name for t in tags})} functions and classes.",
        "",
    ]
    for number, chapter in enumerate(CHAPTERS, 1):
        rows = [t for t in tags if t.chapter is chapter]
        out += [f"## {number}. {chapter.title}", "", f"Its tutorial: [{chapter.title}]({chapter.tutorial}).", ""]
        if not rows:
            out += ["No tagged equations yet.", ""]
            continue
        head = chapter.sections[0].split(" › ")[0]  # the chapter's topic: its sections are shown without it
        out += ["| Section | Equation: what it is | Code |", "|---|---|---|"]
        for t in rows:
            section = t.section.removeprefix(head + " › ") + (" *(beyond the notes)*" if t.beyond else "")
            code = f"[`{t.short}`][{t.name}]"
            out.append(f"| {_cell(section)} | {_math(t.latex)}<br>{_cell(t.what)} | {code} |")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    print(render())
