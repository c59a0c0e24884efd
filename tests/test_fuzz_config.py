"""Property-based fuzzing of the run configuration (issue #14, "Reliability"): TOML files, ``--set`` values and
whole configs resolved through :func:`seqlab.tasks.resolve`, 250 examples each in the suite (SEQLAB_FUZZ_EXAMPLES
for a deeper run, tests/fuzzing.py).

The property: success, or a :class:`SeqlabError` with a non-empty one-line message, never another exception.
A config that resolves must also survive its own ``config.toml``: written with ``RunConfig.to_toml`` (as UTF-8)
and read back the way ``seqlab.api.read_run_config`` reads it, it gives the same config. Crashes hypothesis
found are pinned with ``@example`` and as regression tests at the end of this file.
"""

from __future__ import annotations

import dataclasses
import math
import re
import tomllib
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest
from fuzzing import ANY_BYTES, ANY_CHAR, FUZZ, cwd, explained, scratch_folder, weighted, write
from hypothesis import example, given
from hypothesis import strategies as st

from seqlab import tasks
from seqlab.base import config
from seqlab.base.errors import SeqlabError
from seqlab.tasks import registry


@pytest.fixture(scope="module")
def folder() -> Iterator[Path]:
    """One folder for the module: every example overwrites its test's files (hypothesis runs examples in turn)."""
    with scratch_folder() as path:
        yield path


# ---------------------------------------------------------------------------------------------------------
# the keys of each section, and values as a user types them

MODEL_CONFIGS = {(kind, arch): cls for kind in registry.TASK_MODULES
                 for arch, cls in registry.task_module(kind).MODEL_CONFIGS.items()}
KEYS = {
    "task": [f.name for f in dataclasses.fields(config.TaskConfig)],
    "data": [f.name for f in dataclasses.fields(config.DataConfig)],
    "train": [f.name for f in dataclasses.fields(config.TrainConfig)],
    "model": sorted({"arch"} | {f.name for cls in MODEL_CONFIGS.values() for f in dataclasses.fields(cls)}),
}
WORDS = sorted(set(config.TASK_KINDS) | {arch for _, arch in MODEL_CONFIGS} | {
    "char", "word", "bpe", "auto", "cpu", "cuda", "fp32", "bf16", "fp16", "pre", "post", "sublayer", "sinusoidal",
    "learned", "aic", "bic", "hqic", "c", "pydocs", "multi30k", "conll2003", "sst2", "de", "en"})
VALUE_TEXT = weighted(
    (2, st.integers(-3, 5000).map(str)), (1, st.integers().map(str)), (2, st.floats().map(repr)),
    (1, st.booleans().map(lambda b: str(b).lower())), (3, st.sampled_from(WORDS)),
    (2, st.sampled_from([
        "[0.9, 0.05, 0.05]", "[1,0,0]", "[0.5,0.5]", "[nan,nan,nan]", "[inf,0,0]", "[-0.1,0.6,0.5]", "[]", "{a=1}",
        '"x"', "''", '""', "nan", "-nan", "inf", "-inf", "1e999", "-1e999", "9" * 400, "9" * 5000, "-" + "9" * 400,
        "[" * 3000, "{a=" * 3000, "1979-05-27", "07:32:00", "0x10", "0o7", "1_000", '"a\\u0000b"', '"a\\rb"',
        '"\\ud800"', "\udcff", "true false", "1 # comment", "'''a'''", '"""a\nb"""', "a\nb", "\r", "\x00", "[1,"])),
    (2, st.text(ANY_CHAR, max_size=12)),
)


def _types(cls) -> dict[str, type]:
    """Field name -> the type a TOML value must have (the first of a union, the tuple of a fixed tuple)."""
    out = {}
    for name, hint in typing.get_type_hints(cls).items():
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        out[name] = typing.get_origin(hint) or (args[0] if args else hint)
    return out


TYPES = {"task": _types(config.TaskConfig), "data": _types(config.DataConfig), "train": _types(config.TrainConfig),
         "model": {k: t for cls in MODEL_CONFIGS.values() for k, t in _types(cls).items()} | {"arch": str}}
TYPED_VALUE = {  # a value of the field's own type, as --set text, mostly in range, now and then not
    int: weighted((4, st.integers(0, 64)), (1, st.integers(-2, 10**6))).map(str),
    float: weighted((4, st.floats(0, 1)), (1, st.floats()), (1, st.sampled_from([0.0, 1e-3, 2.0, 1e308]))).map(repr),
    bool: st.sampled_from(["true", "false"]),
    str: st.sampled_from(WORDS),
    tuple: st.sampled_from(["[0.9, 0.05, 0.05]", "[0.8, 0.1, 0.1]", "[1, 0, 0]", "[0.5, 0.5, 0]"]),
}


@st.composite
def typed_override(draw) -> str:
    """``section.key=value`` with a value of the key's type: the overrides that mostly resolve."""
    section = draw(st.sampled_from(config.SECTIONS))
    key = draw(st.sampled_from(sorted(TYPES[section])))
    return f"{section}.{key}={draw(TYPED_VALUE.get(TYPES[section][key], VALUE_TEXT))}"


@st.composite
def override(draw) -> str:
    """``section.key=value`` as a user types it, now and then malformed."""
    section = draw(weighted((12, st.sampled_from(config.SECTIONS)), (1, st.text(max_size=5))))
    key = draw(weighted((12, st.sampled_from(KEYS.get(section, ["x"]))), (1, st.text(max_size=5))))
    value = draw(VALUE_TEXT)
    return draw(weighted((12, st.just(f"{section}.{key}={value}")), (1, st.just(f"{section}={value}")),
                         (1, st.just(f" {section} . {key} = {value} ")), (1, st.text(ANY_CHAR, max_size=20))))


OVERRIDES = weighted((1, st.lists(override(), max_size=4)), (2, st.lists(typed_override(), max_size=3)))


# ---------------------------------------------------------------------------------------------------------
# --set values


@FUZZ
@given(text=VALUE_TEXT)
@example(text="[" * 3000)  # RecursionError from tomllib
@example(text="9" * 5000)  # ValueError: Exceeds the limit (4300 digits) for integer string conversion
def test_parse_value_takes_any_text(text):
    """Any --set value parses: a TOML value, or else the text itself; it never raises."""
    value = config.parse_value(text)
    assert value == text or not isinstance(value, str) or text.strip().startswith(('"', "'"))


# ---------------------------------------------------------------------------------------------------------
# TOML files


def toml_value(value) -> str:
    """A value as TOML text (inline tables for dicts), so generated documents can hold every TOML type."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return '"' + "".join(c if c.isprintable() and c not in '"\\' else f"\\u{ord(c):04x}" for c in value) + '"'
    if isinstance(value, list):
        return "[" + ", ".join(map(toml_value, value)) + "]"
    return "{" + ", ".join(f"{toml_value(k)} = {toml_value(v)}" for k, v in value.items()) + "}"


PLAIN_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)  # TOML holds no surrogates
TOML_SCALAR = weighted((1, st.booleans()), (1, st.integers()), (1, st.floats()), (1, PLAIN_TEXT),
                       (2, st.sampled_from([*WORDS, [0.9, 0.05, 0.05], [1.0, 0.0, 0.0], 0, 1, 2, 8, 64, 0.1, 0.5, ""])))
TOML_VALUE = weighted((6, TOML_SCALAR), (1, st.lists(TOML_SCALAR, max_size=3)),
                      (1, st.dictionaries(PLAIN_TEXT, TOML_SCALAR, max_size=2)))


@st.composite
def config_doc(draw) -> dict:
    """A config document: mostly known sections and keys with values of any TOML type; now and then a section
    that is not a table, an unknown section or key."""
    doc = {}
    kind = draw(st.sampled_from(config.TASK_KINDS))
    for section in draw(st.lists(st.sampled_from(config.SECTIONS), unique=True, max_size=4)):
        if draw(weighted((12, st.just(False)), (1, st.just(True)))):
            doc[section] = draw(TOML_VALUE)  # not a table
            continue
        table = {}
        if section == "task":
            table["kind"] = kind
        if section == "model":
            table["arch"] = draw(st.sampled_from(sorted(arch for k, arch in MODEL_CONFIGS if k == kind)))
        for key in draw(st.lists(st.sampled_from(KEYS[section]), unique=True, max_size=4)):
            table[key] = draw(TOML_VALUE)
        doc[section] = table
    if draw(weighted((12, st.just(False)), (1, st.just(True)))):
        doc[draw(PLAIN_TEXT)] = draw(TOML_VALUE)
    return doc


def toml_text(doc: dict) -> str:
    """The document as TOML: scalars first, then one [table] per dict."""
    lines = [f"{toml_value(k)} = {toml_value(v)}" for k, v in doc.items() if not isinstance(v, dict)]
    for name, table in doc.items():
        if isinstance(table, dict):
            lines += [f"[{toml_value(name)}]", *(f"{toml_value(k)} = {toml_value(v)}" for k, v in table.items())]
    return "\n".join(lines) + "\n"


DEEP_TOML = st.builds(lambda n, kind: ("v = " + ("[" * n + "]" * n if kind else "{a=" * n + "1" + "}" * n)).encode(),
                      st.integers(1, 5000), st.booleans())
TOML_BYTES = weighted((1, ANY_BYTES), (1, DEEP_TOML), (4, config_doc().map(lambda d: toml_text(d).encode())),
                      (1, VALUE_TEXT.map(lambda v: f"[train]\nlr = {v}\n".encode("utf-8", "surrogatepass"))))


@FUZZ
@given(data=TOML_BYTES)
@example(data=b"v = " + b"[" * 3000 + b"]" * 3000)  # RecursionError from tomllib
@example(data=b"[train]\nlr = " + b"9" * 5000 + b"\n")  # ValueError: Exceeds the limit (4300 digits) ...
def test_load_toml_bytes(folder, data):
    doc = explained(config.load_toml, write(folder / "config.toml", data))
    if doc is not None:
        assert isinstance(doc, dict)


# ---------------------------------------------------------------------------------------------------------
# whole configs: a preset or a TOML file, then --set overrides


def assert_round_trip(cfg) -> None:
    """``config.toml`` as a run writes it (UTF-8) and reads it (``read_run_config``) gives the same config."""
    text = cfg.to_toml()
    text.encode("utf-8")  # what write_text_atomic does: a lone surrogate in a value would fail here
    again = registry.from_dict(tomllib.loads(text), drop_unused=True)
    assert again.to_toml() == text


def assert_no_nan(cfg) -> None:
    for section in (cfg.task, cfg.data, cfg.train, cfg.model):
        for f in dataclasses.fields(section):
            value = getattr(section, f.name)
            values = value if isinstance(value, tuple) else (value,)
            assert not any(isinstance(v, float) and math.isnan(v) for v in values), f"{f.name} = {value!r} accepted"


@FUZZ
@given(source=weighted((2, st.sampled_from(config.preset_names())), (1, config_doc())), overrides=OVERRIDES)
@example(source={"task": "lm"}, overrides=[])  # a section that is not a table: ValueError from dict()
@example(source="lm-char", overrides=["train.lr=" + "9" * 400])  # OverflowError: int too large for a float
@example(source="ar", overrides=['data.source="a\\u0000b"'])  # config.toml unreadable: a raw NUL in a string
@example(source="lm-char", overrides=["data.source=\udcff"])  # UnicodeEncodeError writing config.toml
@example(source="lm-char", overrides=["train.epochs=nan"])  # NaN accepted
@example(source={"task": {"\x85": False}}, overrides=[])  # a message split by the key's line break
def test_resolve(folder, source, overrides):
    if isinstance(source, dict):
        source = str(write(folder / "run.toml", toml_text(source).encode()))
    cfg = explained(tasks.resolve, source, overrides)
    if cfg is not None:
        assert_no_nan(cfg)
        assert_round_trip(cfg)


@FUZZ
@given(raw=st.dictionaries(weighted((4, st.sampled_from(config.SECTIONS)), (1, PLAIN_TEXT)), TOML_VALUE, max_size=4),
       overrides=OVERRIDES)
@example(raw={"task": "lm"}, overrides=["task.kind=lm"])  # ValueError from dict("lm")
@example(raw={"train": [1]}, overrides=[])  # AttributeError: 'list' object has no attribute 'items'
def test_apply_overrides_to_any_document(raw, overrides):
    """``--set`` onto whatever a TOML file held (sections that are tables or not), then validation."""
    merged = explained(config.apply_overrides, raw, overrides)
    if merged is not None:
        explained(tasks.from_dict, merged)


@FUZZ
@given(name=weighted((3, st.text(ANY_CHAR, max_size=20)), (1, st.builds("{}.toml".format, st.text(ANY_CHAR, max_size=8))),
                     (1, st.integers(250, 3000).map(lambda n: "a" * n + ".toml"))))
@example(name="\r.toml")  # a message split by the line break in the name
@example(name="\x00.toml")  # ValueError: embedded null byte
@example(name="a" * 300 + ".toml")  # OSError: File name too long
def test_resolve_any_name(folder, name):
    """``seqlab train NAME``: a preset name, a path, or anything else (in an empty folder)."""
    if name.startswith("/") or name.startswith("~"):
        return
    here = folder / "empty"
    here.mkdir(exist_ok=True)
    with cwd(here):
        explained(tasks.resolve, name, [])


# ---------------------------------------------------------------------------------------------------------
# regression tests: the crashes hypothesis found, each now a one-line SeqlabError (or, for --set values, the text)


def one_line_error(call, *args, match: str) -> str:
    with pytest.raises(SeqlabError, match=match) as info:
        call(*args)
    message = str(info.value)
    assert message.splitlines() == [message]
    return message


@pytest.mark.parametrize("text", ["[" * 3000, "9" * 5000])
def test_parse_value_too_deep_or_too_many_digits_is_text(text):
    # were RecursionError (tomllib nests by recursion) and ValueError (int()'s 4300-digit limit)
    assert config.parse_value(text) == text


@pytest.mark.parametrize("data", [b"v = " + b"[" * 3000 + b"]" * 3000, b"[train]\nlr = " + b"9" * 5000 + b"\n"])
def test_load_toml_too_deep_or_too_many_digits(tmp_path, data):
    one_line_error(config.load_toml, write(tmp_path / "c.toml", data), match=r"c\.toml is not valid TOML \(")


@pytest.mark.parametrize("name", ["a" * 300 + ".toml", "\x00.toml"])
def test_resolve_name_the_system_refuses(name):
    # were OSError (File name too long, from Path.is_dir) and ValueError (embedded null byte, from open)
    one_line_error(tasks.resolve, name, [], match="(cannot read config file|not found)")


def test_resolve_name_with_a_line_break_stays_one_line():
    message = one_line_error(tasks.resolve, "\r.toml", [], match="config file '\\\\r.toml' not found")
    assert "\r" not in message


@pytest.mark.parametrize("text", ['task = "lm"\n', "train = [1]\n", 'model = "transformer"\n'])
def test_resolve_section_that_is_not_a_table(tmp_path, text):
    # were ValueError / TypeError from dict(...) and AttributeError from .items()
    path = str(write(tmp_path / "c.toml", text.encode()))
    section = text.split(" ")[0]
    one_line_error(tasks.resolve, path, [], match=rf"config section {section} must be a table of keys")
    one_line_error(tasks.resolve, path, ["train.lr=0.1"], match=rf"config section {section} must be a table")


def test_resolve_int_too_large_for_a_float():
    # was OverflowError: int too large to convert to float
    one_line_error(tasks.resolve, "lm-char", ["train.lr=" + "9" * 400], match=r"train\.lr is too large .*400 digits")


def test_resolve_unknown_key_with_a_line_break_stays_one_line(tmp_path):
    path = str(write(tmp_path / "c.toml", b'[task]\n"\\u0085" = false\n'))
    one_line_error(tasks.resolve, path, [], match=r"unknown key task\.'\\x85'")


@pytest.mark.parametrize("override", ["train.epochs=nan", "train.min_lr=nan", "train.weight_decay=nan",
                                      "train.epochs=inf", "data.split=[nan, nan, nan]", "train.beta1=nan",
                                      "train.beta2=2.0"])
def test_resolve_refuses_nan_inf_and_betas_out_of_range(override):
    # NaN passed every `value < low` check; an infinite train.epochs reached int() in the Trainer, a beta
    # outside [0, 1) torch.optim.AdamW's ValueError
    key = override.split("=")[0]
    one_line_error(tasks.resolve, "lm-char", [override], match=re.escape(key) + ".* (must be|is outside)")


def test_config_toml_round_trips_control_characters(tmp_path):
    # a NUL (or any control character but tab) was written raw into config.toml, which TOML then refuses
    cfg = tasks.resolve("ar", ['data.source="a\\u0000b\\u007fc\\rd"'])
    assert cfg.data.source == "a\x00b\x7fc\rd"
    assert registry.from_dict(tomllib.loads(cfg.to_toml()), drop_unused=True) == cfg


def test_resolve_refuses_a_lone_surrogate():
    # argv bytes that are not UTF-8 arrive as lone surrogates; config.toml (UTF-8) could not be written
    one_line_error(tasks.resolve, "lm-char", ["data.source=\udcff.txt"], match=r"data\.source = .* not UTF-8")
