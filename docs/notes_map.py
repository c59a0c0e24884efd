r"""The "From the notes to the code" and "Notation and departures from the notes" pages, generated from the
admonitions in seqlab's docstrings.

**Equation tags.** A tag is a markdown admonition in a docstring, after a blank line, in one form everywhere::

    !!! equation "Recurrent neural networks › Long short-term memory"
        $c_t = f_t \odot c_{t-1} + i_t \odot \tilde{c}_t$: the long-term memory: the forget gate keeps part
        of it, the input gate adds the candidate.

- the title names the notes' section as "Topic › Section" (one of :data:`CHAPTERS`' sections), with
  " (beyond the notes)" appended when the notes do not have that equation;
- the one indented paragraph below it starts with the equation in LaTeX between single dollars, then a colon and
  what it is (it may wrap onto more lines of the same indentation). Docstrings holding LaTeX are raw strings.
- a tag states the form the code computes by default, or names the option that computes it. It says which in
  *declarations*, lines at the end of its paragraph that the build checks against the configs (below)::

      default: model.norm = "pre"
      default: model.scale_embeddings = false; presets: mt-transformer = true
      option: model.norm = "sublayer"
      option: model.pooling = "cls" for classify/pretrained

**Departures.** A second admonition form, beside the code that departs from the notes (or that computes what the
notes get wrong), makes the rows of the departures page::

    !!! departure "Transformer › Embedding"
        notes: $\mathrm{embed}(X) = (E X) \sqrt{d_{model}} + P$.
        seqlab: $E X + P$ unless ``model.scale_embeddings = true`` (the notes' form).
        default: model.scale_embeddings = false; presets: mt-transformer = true

The title is a section of :data:`CHAPTERS`, with " (notation)" appended for a difference in names or layout
only, or " (slip in the notes)" for an error in the notes that seqlab computes correctly (else the row is a
departure: seqlab computes something else). The paragraph is a line starting ``notes:`` (what the notes write),
then a line starting ``seqlab:`` (what seqlab does instead), each may wrap, then optional declarations.

**Declarations** (in tags and departures), one a line, each ``default:`` or ``option:``, then
``SECTION.KEY = VALUE`` with a TOML value (``"pre"``, ``false``, ``1.0``), then optionally ``for KIND/ARCH, ...``
and ``; presets: ...``. The build checks each against the config dataclasses and the shipped presets:

- which configs: for ``task.``, ``data.``, ``train.``: :class:`~seqlab.base.config.TaskConfig`, ``DataConfig``,
  ``TrainConfig`` and every preset. For ``model.``: every registered model config (``MODEL_CONFIGS`` of every
  task module: one dataclass per ``task.kind``/``model.arch``) that has a field ``KEY``, or, after ``for``, only
  those ``kind/arch`` (each must have the field): the key means the same in every model that has it, unless the
  declaration narrows it. A preset counts when its ``task.kind``/``model.arch`` (defaults ``lm``/``transformer``)
  is one of those; its value is its own ``[section]`` key, else that config's default.
- ``default: S.KEY = V``: every such config's default is ``V``, and the presets whose value is not ``V`` are
  exactly those listed after ``presets:`` with their values (``presets: mt-transformer = true``): a tag cannot
  call a form the default while a shipped preset silently trains another.
- ``option: S.KEY = V``: every such config that builds with its defaults accepts ``V`` (``cls(KEY=V)`` raises
  nothing) and ``V`` is not the default of all of them (then it is a default); the presets that use ``V`` are
  exactly those listed after ``presets:`` (names only).

A disagreement raises :class:`TagError`, so the site build fails.

The API reference renders both admonitions (an "equation" or "departure" box titled with the section), whatever
docstring style griffe parses (they are plain markdown, not docstring sections). A function or class may carry
several; the tagged object is the implementing function, and its qualified name (``module.QualName``) is what the
pages link, as an mkdocstrings cross-reference. An admonition on a module docstring, on private names (which the
API reference does not render) or on anything that does not import back by its qualified name raises
:class:`TagError`, so the site build fails.

``render()`` returns the notes-to-code page's markdown and ``render_departures()`` the departures page's
(docs/hooks.py writes them as notes-to-code.md and departures.md); ``collect()`` and ``collect_departures()``
return the tags and the departures, in the syllabus order of :data:`CHAPTERS`.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

PACKAGE = "seqlab"
BEYOND = " (beyond the notes)"
NOTATION = " (notation)"
SLIP = " (slip in the notes)"
TAG = '!!! equation "'
DEPARTURE = '!!! departure "'
_HEADER = re.compile(r'^(?P<indent>[ \t]*)!!! (?P<word>equation|departure) "(?P<topic>[^"]+)"[ \t]*$')
_BODY = re.compile(r"^\$(?P<latex>[^$]+)\$:\s+(?P<what>\S.*)$", re.S)
_DECLARATION = re.compile(
    r"^(?P<kind>default|option):\s*(?P<section>task|data|model|train)\.(?P<key>\w+)\s*=\s*(?P<value>.+?)"
    r"(?:\s+for\s+(?P<scope>[\w-]+/[\w-]+(?:\s*,\s*[\w-]+/[\w-]+)*))?"
    r"(?:\s*;\s*presets:\s*(?P<presets>.+?))?\s*$")
_STARTS = ("default:", "option:")


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
        "Recurrent neural networks › One to many",
        "Recurrent neural networks › Sentence probability",
        "Sequence labelling › Character features",
        "Sequence labelling › Linear-chain CRF",
    )),
    Chapter("Word embeddings", "tutorials/04-word-embeddings.md", (
        "Word embeddings › Embedding matrix",
        "Word embeddings › Neural language model",
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
    """A tag or departure that cannot be put on its page: malformed, naming an unknown section, not resolving, or
    declaring a default or option the configs and presets contradict."""


@dataclass(frozen=True)
class Declaration:
    """``default:`` or ``option:`` ``section.key = value`` [``for kind/arch, ...``] [``; presets: ...``]."""

    kind: str  # "default" or "option"
    section: str  # "model", "train", "data" or "task"
    key: str
    value: Any  # the TOML value
    scope: tuple[str, ...]  # "kind/arch" the declaration is narrowed to ((): every config with the key)
    presets: tuple[tuple[str, Any], ...]  # default: (name, its value) of the presets that differ; option: (name, V)
    text: str  # as written

    def markdown(self) -> str:
        """How the pages show it: "Default: `model.norm = "pre"`; the presets ...", "Option: ..."."""
        head = f"{self.kind.capitalize()}: `{self.section}.{self.key} = {_toml(self.value)}`"
        if self.scope:
            head += " for " + ", ".join(f"`{s}`" for s in self.scope)
        if self.kind == "default":
            if not self.presets:
                return head + " (no preset sets another value)"
            return head + "; presets that set another value: " + ", ".join(
                f"`{name}` (`{_toml(value)}`)" for name, value in self.presets)
        if not self.presets:
            return head + " (no preset sets it)"
        return head + " (set by " + ", ".join(f"`{name}`" for name, _ in self.presets) + ")"


@dataclass(frozen=True)
class Tag:
    section: str  # "Topic › Section", one of CHAPTERS' sections
    latex: str  # the equation, LaTeX without the dollars
    what: str  # what it is, one paragraph of markdown (without the declarations)
    beyond: bool  # the notes do not have this equation
    name: str  # the implementing object's qualified name, e.g. "seqlab.nn.recurrent.lstm_step"
    module: str  # the module that defines it
    order: int  # position in the walk of its module (definition order), then in its docstring
    declarations: tuple[Declaration, ...] = ()  # what default or option it states, checked by the build

    @property
    def chapter(self) -> Chapter:
        return CHAPTERS[_ORDER[self.section][0]]

    @property
    def short(self) -> str:
        """The name as the page shows it: the module's last part and the qualified name ("crf.CRF.decode"); the
        link itself is the full name."""
        return f"{self.module.rsplit('.', 1)[-1]}.{self.name[len(self.module) + 1:]}"


@dataclass(frozen=True)
class Departure:
    section: str  # "Topic › Section", one of CHAPTERS' sections
    kind: str  # "departure", "notation" or "slip"
    notes: str  # what the notes write (markdown, inline math)
    ours: str  # what seqlab does instead
    name: str  # the qualified name of the object whose docstring holds it (the code that departs)
    module: str
    order: int
    declarations: tuple[Declaration, ...] = ()

    chapter = Tag.chapter
    short = Tag.short


KINDS = {"departure": "departure", "notation": "notation", "slip": "the notes' slip"}  # kind -> the page's word


def _admonitions(doc: str | None, where: str, word: str) -> list[tuple[str, list[str]]]:
    """The admonitions ``!!! word "title"`` of a docstring as (title, the body's lines, stripped)."""
    lines = inspect.cleandoc(doc or "").splitlines()
    found = []
    for i, line in enumerate(lines):
        m = _HEADER.match(line)
        if not m or m["word"] != word:
            continue
        if m["indent"]:
            raise TagError(f"{where}: an {word} admonition must start at the docstring's margin (markdown reads an "
                           f"admonition there only); line {line.strip()!r}")
        if i == 0 or lines[i - 1].strip():
            raise TagError(f"{where}: an {word} admonition needs a blank line before it (else markdown renders it "
                           f"as text); line {line.strip()!r}")
        body = []  # the indented lines right below the header
        for nxt in lines[i + 1:]:
            if not nxt[:1].isspace() or not nxt.strip():
                break
            body.append(nxt.strip())
        rest = lines[i + 1 + len(body):]
        if rest and not rest[0].strip() and next((x for x in rest if x.strip()), "x")[:1].isspace():
            raise TagError(f"{where}: the {word} {m['topic']!r} has more than one paragraph; keep it to one")
        found.append((m["topic"], body))
    return found


def _split_declarations(body: list[str], where: str) -> tuple[list[str], tuple[Declaration, ...]]:
    """The body's lines before its first declaration, and the declarations (each may wrap onto more lines)."""
    first = next((i for i, line in enumerate(body) if line.startswith(_STARTS)), len(body))
    texts: list[str] = []
    for line in body[first:]:
        if line.startswith(_STARTS):
            texts.append(line)
        else:
            texts[-1] += " " + line
    return body[:first], tuple(parse_declaration(t, where) for t in texts)


def parse_declaration(text: str, where: str = "") -> Declaration:
    m = _DECLARATION.match(text)
    if not m:
        raise TagError(f"{where}: cannot read the declaration {text!r}; write e.g. 'default: model.norm = \"pre\"', "
                       "'option: model.norm = \"post\" for lm/transformer' or "
                       "'default: model.scale_embeddings = false; presets: mt-transformer = true'")
    value = _value(m["value"], text, where)
    scope = tuple(s.strip() for s in m["scope"].split(",")) if m["scope"] else ()
    if scope and m["section"] != "model":
        raise TagError(f"{where}: {text!r}: only model keys take 'for KIND/ARCH'")
    presets = []
    for item in (m["presets"] or "").split(","):
        if not item.strip():
            continue
        name, eq, raw = item.partition("=")
        if m["kind"] == "default" and not eq:
            raise TagError(f"{where}: {text!r}: a default lists each preset that differs with its value "
                           f"('presets: {name.strip()} = VALUE')")
        preset_value = _value(raw, text, where) if eq else value
        if m["kind"] == "option" and not _equal(preset_value, value):
            raise TagError(f"{where}: {text!r}: an option lists the presets that set it (names only)")
        presets.append((name.strip(), preset_value))
    return Declaration(m["kind"], m["section"], m["key"], value, scope, tuple(presets), text)


def _value(raw: str, text: str, where: str) -> Any:
    try:
        return tomllib.loads(f"v = {raw.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        raise TagError(f"{where}: {text!r}: {raw.strip()!r} is not a TOML value (a string needs double quotes)") \
            from None


def parse(doc: str | None, where: str) -> list[tuple[str, str, str, bool, tuple[Declaration, ...]]]:
    """The equation tags of a docstring as (section, latex, what, beyond, declarations); ``where`` names the object
    in errors."""
    tags = []
    for topic, body in _admonitions(doc, where, "equation"):
        paragraph, declarations = _split_declarations(body, where)
        b = _BODY.match(" ".join(paragraph))
        if not b:
            raise TagError(f"{where}: the tag {topic!r} must continue with one indented paragraph "
                           "'$LaTeX$: what it is'")
        section = topic.removesuffix(BEYOND)
        _known(section, where)
        tags.append((section, b["latex"].strip(), b["what"].strip(), topic.endswith(BEYOND), declarations))
    return tags


def parse_departures(doc: str | None, where: str) -> list[tuple[str, str, str, str, tuple[Declaration, ...]]]:
    """The departures of a docstring as (section, kind, notes, ours, declarations)."""
    found = []
    for topic, body in _admonitions(doc, where, "departure"):
        paragraph, declarations = _split_declarations(body, where)
        text = " ".join(paragraph)
        m = re.match(r"^notes:\s+(?P<notes>\S.*?)\s+seqlab:\s+(?P<ours>\S.*)$", text, re.S)
        if not m or not paragraph[0].startswith("notes:") or \
                not any(line.startswith("seqlab:") for line in paragraph):
            raise TagError(f"{where}: the departure {topic!r} must continue with one indented paragraph: a line "
                           "'notes: what the notes write', then a line 'seqlab: what seqlab does'")
        kind, section = "departure", topic
        for suffix, name in ((NOTATION, "notation"), (SLIP, "slip")):
            if topic.endswith(suffix):
                kind, section = name, topic.removesuffix(suffix)
        _known(section, where)
        found.append((section, kind, m["notes"].strip(), m["ours"].strip(), declarations))
    return found


def _known(section: str, where: str) -> None:
    if section not in _ORDER:
        raise TagError(f"{where}: unknown section {section!r}; use one of notes_map.CHAPTERS' sections "
                       "(or add it there)")


# ------------------------------------------------------------------------------------------------------
# declarations against the configs and the presets


def _equal(a: Any, b: Any) -> bool:
    """TOML equality: a bool is not a number; 1 and 1.0 are the same number; a tuple is a list."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    return a == b


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return repr(value)


def _field_default(cls: type, key: str) -> Any:
    f = next(f for f in dataclasses.fields(cls) if f.name == key)
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def _presets() -> dict[str, dict]:
    from seqlab.base import config

    return {name: tomllib.loads(config.preset_text(name)) for name in config.preset_names()}


def _configs(decl: Declaration, where: str) -> dict[str, type]:
    """{"kind/arch" (or the section's name): config class} that the declaration is checked against."""
    if decl.section != "model":
        from seqlab.base import config

        cls = {"task": config.TaskConfig, "data": config.DataConfig, "train": config.TrainConfig}[decl.section]
        if decl.key not in {f.name for f in dataclasses.fields(cls)}:
            raise TagError(f"{where}: {decl.text!r}: {cls.__name__} has no field {decl.key!r}")
        return {decl.section: cls}
    from seqlab.tasks import registry

    every = {f"{kind}/{arch}": cls for kind in registry.TASK_MODULES
             for arch, cls in registry.task_module(kind).MODEL_CONFIGS.items()}
    has = {name: cls for name, cls in every.items() if decl.key in {f.name for f in dataclasses.fields(cls)}}
    if decl.scope:
        unknown = [s for s in decl.scope if s not in every]
        lacking = [s for s in decl.scope if s in every and s not in has]
        if unknown or lacking:
            raise TagError(f"{where}: {decl.text!r}: " + "; ".join(
                [f"no model config for {', '.join(unknown)} (known: {', '.join(every)})"] * bool(unknown) +
                [f"the model config of {', '.join(lacking)} has no field {decl.key!r}"] * bool(lacking)))
        return {s: has[s] for s in decl.scope}
    if not has:
        raise TagError(f"{where}: {decl.text!r}: no model config has a field {decl.key!r}")
    return has


def check_declaration(decl: Declaration, where: str, presets: dict[str, dict] | None = None) -> None:
    """Raise :class:`TagError` where the config dataclasses or the shipped presets contradict ``decl`` (the rules:
    the module docstring)."""
    configs = _configs(decl, where)
    presets = _presets() if presets is None else presets
    name = f"{decl.section}.{decl.key}"
    defaults = {scope: _field_default(cls, decl.key) for scope, cls in configs.items()}
    if decl.kind == "default":
        wrong = [f"{cls.__module__}.{cls.__qualname__} ({scope}) has {name} = {_toml(defaults[scope])}"
                 for scope, cls in configs.items() if not _equal(defaults[scope], decl.value)]
        if wrong:
            raise TagError(f"{where}: states the default {name} = {_toml(decl.value)}, but " + "; ".join(wrong) +
                           " (state the form the code computes by default, or narrow it with 'for KIND/ARCH')")
    else:
        if all(_equal(d, decl.value) for d in defaults.values()):
            raise TagError(f"{where}: {name} = {_toml(decl.value)} is the default, not an option: declare it with "
                           "'default:'")
        for scope, cls in configs.items():
            try:
                cls()
            except Exception:  # noqa: BLE001 - a config that needs a setting (a path) is not checked
                continue
            try:
                cls(**{decl.key: decl.value})
            except Exception as e:  # noqa: BLE001 - the config's own validation
                raise TagError(f"{where}: {name} = {_toml(decl.value)} is not an option of "
                               f"{cls.__module__}.{cls.__qualname__} ({scope}): {e}") from None
    used: dict[str, Any] = {}  # preset -> its value, for the presets the declaration covers
    for preset, raw in presets.items():
        if decl.section == "model":
            scope = f"{raw.get('task', {}).get('kind', 'lm')}/{raw.get('model', {}).get('arch', 'transformer')}"
        else:
            scope = decl.section
        if scope in configs:
            used[preset] = raw.get(decl.section, {}).get(decl.key, defaults[scope])
    if decl.kind == "default":
        actual = {p: v for p, v in used.items() if not _equal(v, decl.value)}
    else:
        actual = {p: v for p, v in used.items() if _equal(v, decl.value)}
    listed = dict(decl.presets)
    missing = {p: v for p, v in actual.items() if p not in listed or not _equal(listed[p], v)}
    extra = [p for p in listed if p not in actual]
    if missing or extra:
        what = "set another value than the default" if decl.kind == "default" else "use the option"
        found = ", ".join(f"{p} = {_toml(v)}" for p, v in actual.items()) or "none"
        raise TagError(f"{where}: {decl.text!r}: the presets that {what} are {found}; "
                       f"list them exactly after '; presets:' (wrong or missing: "
                       f"{', '.join([*missing, *extra])})")


# ------------------------------------------------------------------------------------------------------
# walking the package


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


def _module_items(module: ModuleType, source: str, word: str, presets: dict[str, dict]) -> list:
    """The tags (``word`` "equation") or departures ("departure") of one module, each checked."""
    parser = parse if word == "equation" else parse_departures
    if parser(module.__doc__, module.__name__):
        raise TagError(f"{module.__name__}: an {word} admonition in the module docstring; put it on the "
                       "implementing function or class")
    items: list = []
    seen: set[int] = set()
    for value, doc_of in _members(module):
        if id(value) in seen:
            continue
        seen.add(id(value))
        name = f"{module.__name__}.{value.__qualname__}"
        found = parser(doc_of.__doc__, name)
        if not found:
            continue
        if _private(value.__qualname__) or "<locals>" in value.__qualname__:
            raise TagError(f"{name}: tags go on public names (the API reference does not render this one)")
        if not _same(resolve(name), value):
            raise TagError(f"{name} does not resolve to the tagged object")
        for section, a, b, c, declarations in found:
            for decl in declarations:
                check_declaration(decl, f"{name} ({section})", presets)
            if word == "equation":
                items.append(Tag(section, a, b, c, name, module.__name__, len(items), declarations))
            else:
                items.append(Departure(section, a, b, c, name, module.__name__, len(items), declarations))
    in_source = sum(1 for line in source.splitlines() if (m := _HEADER.match(line)) and m["word"] == word)
    if in_source != len(items):
        raise TagError(f"{module.__name__}: {in_source} {word} admonitions in the source but {len(items)} on its "
                       "public functions and classes; one sits where no qualified name reaches it (a nested "
                       "function, a comment, a string that is not a docstring)")
    return items


def _collect(package: str, word: str) -> list:
    root = importlib.import_module(package)
    base = Path(root.__file__).parent
    marker = TAG if word == "equation" else DEPARTURE
    items: list = []
    presets: dict[str, dict] | None = None
    for path in sorted(base.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        if marker not in source:
            continue
        if presets is None and re.search(r"^\s*(default|option):", source, re.M):
            presets = _presets()
        parts = path.relative_to(base).with_suffix("").parts
        name = ".".join((package, *parts[:-1])) if parts[-1] == "__init__" else ".".join((package, *parts))
        items += _module_items(importlib.import_module(name), source, word, presets or {})
    return items


def collect(package: str = PACKAGE) -> list[Tag]:
    """Every tag of ``package``'s modules, in the order of :data:`CHAPTERS`' sections; within a section the
    notes' equations first, then those beyond the notes, each in module and definition order.

    Only the modules whose source holds a tag are imported. Raises :class:`TagError` on a tag that is
    malformed, names an unknown section, does not resolve by its qualified name, or declares a default or an
    option that the configs or the presets contradict.
    """
    tags = _collect(package, "equation")
    return sorted(tags, key=lambda t: (_ORDER[t.section], t.beyond, t.module, t.order))


def collect_departures(package: str = PACKAGE) -> list[Departure]:
    """Every departure of ``package``'s modules, in the order of :data:`CHAPTERS`' sections, then module and
    definition order. Raises :class:`TagError` as :func:`collect` does."""
    found = _collect(package, "departure")
    return sorted(found, key=lambda d: (_ORDER[d.section], d.module, d.order))


# ------------------------------------------------------------------------------------------------------
# the pages


def _math(latex: str) -> str:
    """Inline math for a table cell: a bare | would split the cell, so it becomes \\vert (\\| \\Vert)."""
    latex = latex.replace(r"\|", r"\Vert ").replace("|", r"\vert ")
    return f"${latex}$"


_ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|obj|exc):`~?([^`]+)`")


def _cell(text: str) -> str:
    """Markdown for a table cell: one line, Sphinx roles (:func:`x`) as code, ``|`` as \\vert inside $math$ and
    escaped elsewhere, the first letter capitalised (unless the first word has capitals of its own: sacreBLEU)."""
    parts = _ROLE.sub(r"`\1`", " ".join(text.split())).split("$")
    text = "$".join(_math(p)[1:-1] if i % 2 else p.replace("|", r"\|") for i, p in enumerate(parts))
    first = text.split(" ", 1)[0]
    return text if any(c.isupper() for c in first[1:]) else text[:1].upper() + text[1:]


def _declared(declarations: tuple[Declaration, ...]) -> str:
    return "".join(f"<br>{d.markdown()}" for d in declarations)


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
        f"A row states the form the code computes by default, or names the option that computes it: its "
        f"*Default* and *Option* lines are checked against the config dataclasses and the shipped presets when "
        f"the site is built. Where seqlab's notation or formulas differ from the notes', "
        f"[Notation and departures from the notes](departures.md) says how. "
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
            out.append(f"| {_cell(section)} | {_math(t.latex)}<br>{_cell(t.what)}{_declared(t.declarations)} "
                       f"| {code} |")
        out.append("")
    return "\n".join(out)


def chapter_anchor(number: int, chapter: Chapter) -> str:
    """The anchor of a chapter's heading on both pages ("6-the-transformer")."""
    from markdown.extensions.toc import slugify

    return slugify(f"{number}. {chapter.title}", "-")


# the Transformer presets against the notes' Transformer (Named Tensors: Transformer; the feed-forward with ReLU)
TRANSFORMER_KEYS = ("norm", "positions", "activation", "scale_embeddings")
NOTES_TRANSFORMER = {"norm": "sublayer", "positions": "sinusoidal", "activation": "relu", "scale_embeddings": True}


def transformer_presets() -> list[tuple[str, dict[str, Any]]]:
    """(preset, {key: value}) of every preset whose model config has the keys of :data:`TRANSFORMER_KEYS`
    (its own value, else its config's default)."""
    from seqlab.tasks import registry

    rows = []
    for name, raw in _presets().items():
        kind = raw.get("task", {}).get("kind", "lm")
        arch = raw.get("model", {}).get("arch", "transformer")
        cls = registry.task_module(kind).MODEL_CONFIGS.get(arch)
        fields = {f.name for f in dataclasses.fields(cls)} if cls else set()
        if "norm" not in fields:
            continue
        rows.append((name, {k: raw.get("model", {}).get(k, _field_default(cls, k)) if k in fields else None
                            for k in TRANSFORMER_KEYS}))
    return rows


def _transformer_table() -> list[str]:
    out = ["### The Transformer presets against the notes", "",
           "The notes' Transformer, and what each shipped Transformer preset computes (its own `[model]` keys, "
           "else its config's defaults; read from the presets when the site is built). A cell in bold differs "
           "from the notes.", "",
           "| | `norm` | `positions` | `activation` | `scale_embeddings` |", "|---|---|---|---|---|",
           "| the notes | " + " | ".join(f"`{_toml(NOTES_TRANSFORMER[k])}`" for k in TRANSFORMER_KEYS) + " |"]
    for name, values in transformer_presets():
        cells = []
        for k in TRANSFORMER_KEYS:
            v = values[k]
            if v is None:
                cells.append("(no such key)")
            else:
                cells.append(f"`{_toml(v)}`" if _equal(v, NOTES_TRANSFORMER[k]) else f"**`{_toml(v)}`**")
        out.append(f"| [`{name}`](reference/presets.md#{name}) | " + " | ".join(cells) + " |")
    return out + [""]


def render_departures(package: str = PACKAGE) -> str:
    """The markdown of docs/departures.md."""
    rows = collect_departures(package)
    counts = {k: sum(d.kind == k for d in rows) for k in KINDS}
    out = [
        "# Notation and departures from the notes",
        "",
        "Where seqlab writes the notes' equations in other names or another layout (*notation*), where it computes "
        "something other than the notes (*departure*), and where the notes themselves slip and seqlab computes "
        "the correct formula (*the notes' slip*), chapter by chapter, each with the code it concerns.",
        "",
        f"This page is generated from the code: each row is a *departure* admonition in the docstring of the "
        f"object it names, beside the code that departs, and the site's build fails when that name no longer "
        f"resolves. A *Default* or *Option* line is checked against the config dataclasses and the shipped "
        f"presets when the site is built. The equations themselves are on "
        f"[From the notes to the code](notes-to-code.md). {len(rows)} rows: {counts['notation']} of notation, "
        f"{counts['departure']} departures, {counts['slip']} slips in the notes.",
        "",
    ]
    for number, chapter in enumerate(CHAPTERS, 1):
        found = [d for d in rows if d.chapter is chapter]
        out += [f"## {number}. {chapter.title}", "", f"Its tutorial: [{chapter.title}]({chapter.tutorial}).", ""]
        if not found:
            out += ["Nothing departs from the notes here.", ""]
        else:
            head = chapter.sections[0].split(" › ")[0]
            out += ["| Section | Kind | The notes | seqlab | Code |", "|---|---|---|---|---|"]
            for d in found:
                out.append(f"| {_cell(d.section.removeprefix(head + ' › '))} | {KINDS[d.kind]} | {_cell(d.notes)} | "
                           f"{_cell(d.ours)}{_declared(d.declarations)} | [`{d.short}`][{d.name}] |")
            out.append("")
        if chapter.title == "The Transformer":
            out += _transformer_table()
    return "\n".join(out)


if __name__ == "__main__":
    print(render())
    print(render_departures())
