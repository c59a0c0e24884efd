"""bench/RESULTS.md is written only by the bench scripts: outside the file's header every line sits in a start/end
block whose start marker names the script that writes it (bench/common.py ``write_section``), that script exists
and writes a section of that name, nothing was typed in after the script's closing ``_Recorded ...`` line, that
line names the CPU model and its instruction sets, and the hash it records is the hash of the section's text, so
an edit after the run fails here.

Sections recorded before the hash and the instruction sets were written (issue #43) are listed by name in
``UNHASHED`` and ``WITHOUT_ISA``: each list may only shrink (a listed section that now carries what it lacked
fails until it is taken off), and re-recording a section on the final tree takes it off."""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "RESULTS.md"
_PATH = sys.path[:]  # put back after the imports: bench/onnx.py must not shadow the onnx package later
sys.path.append(str(ROOT / "bench"))
import common  # noqa: E402  (bench/common.py: the writer whose output this file checks)
from common import HEADER, body_hash  # noqa: E402
import stale  # noqa: E402  (bench/stale.py: which sections are older than their code)

sys.path[:] = _PATH

BLOCK = re.compile(r"<!-- (\S+?):start(?: (\S+))? -->\n(.*?)<!-- \1:end -->", re.S)
HASH = re.compile(r"; body sha256 ([0-9a-f]{16})\._$")
ISA = ("avx512f", "avx512_bf16", "amx_bf16")  # named yes/no on every _Recorded line (avx2 too on hashed ones)
UNHASHED = {  # recorded before write_section hashed the body (issue #43: re-record them on the final tree)
    "lm_throughput-cuda"}
WITHOUT_ISA: set[str] = set()  # recorded with the CPU written as "x86_64" (no model, no instruction sets)


def section_names(script: Path) -> list[str]:
    """The section names (or, for an f-string, the constant text before its first field) the script passes to
    ``write_section`` as its first argument."""
    names = []
    for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "write_section":
            first = node.args[0]
            if isinstance(first, ast.Constant):
                names.append(first.value)
            elif isinstance(first, ast.JoinedStr) and first.values and isinstance(first.values[0], ast.Constant):
                names.append(first.values[0].value + "*")
    return names


def test_every_section_is_in_a_block_naming_the_script_that_writes_it():
    text = RESULTS.read_text(encoding="utf-8")
    blocks = list(BLOCK.finditer(text))
    assert blocks
    names = [b.group(1) for b in blocks]
    assert len(names) == len(set(names)), "a section appears twice"
    outside = [line for line in BLOCK.sub("", text).splitlines() if line.strip()]
    assert outside == [line for line in HEADER.splitlines() if line.strip()], (
        "text outside the sections (only bench/common.py's HEADER may stand there)")
    for block in blocks:
        name, script, body = block.groups()
        assert script, f"section {name}: its start marker names no script"
        path = ROOT / script
        assert path.is_file() and path.parent == ROOT / "bench", f"section {name}: {script} does not exist"
        written = section_names(path)
        assert any(name == w or (w.endswith("*") and name.startswith(w[:-1])) for w in written), (
            f"section {name}: {script} writes only {written}")
        lines = body.rstrip().splitlines()
        assert lines[0].startswith("## "), f"section {name} does not start with its heading"
        assert lines[-1].startswith("_Recorded "), f"section {name}: text after the script's _Recorded line"
        check_recorded_line(name, lines)


def check_recorded_line(name: str, lines: list[str]) -> None:
    """The section's ``_Recorded`` line names the instruction sets and the hash of the text above it, unless the
    section is listed as recorded before that (and then it must still lack it: the lists only shrink)."""
    recorded = lines[-1]
    flags = ISA if name in UNHASHED else ("avx2", *ISA)
    has_isa = all(re.search(rf"\b{flag} (yes|no)\b", recorded) for flag in flags)
    assert has_isa != (name in WITHOUT_ISA), (
        f"section {name}: its _Recorded line does not name {', '.join(flags)} as yes/no" if not has_isa else
        f"section {name} now names its instruction sets: take it off WITHOUT_ISA")
    found = HASH.search(recorded)
    assert bool(found) != (name in UNHASHED), (
        f"section {name}: its _Recorded line records no body hash (write it with bench/common.py write_section)"
        if not found else f"section {name} now records its hash: take it off UNHASHED")
    if found:
        assert found.group(1) == body_hash("\n".join(lines[:-1])), (
            f"section {name} was edited after its script wrote it (the body hash differs): rerun the script")


def test_the_legacy_lists_name_sections_that_exist():
    names = {m.group(1) for m in BLOCK.finditer(RESULTS.read_text(encoding="utf-8"))}
    assert UNHASHED <= names and WITHOUT_ISA <= names, "a listed section is gone: take it off the list"


def test_an_edited_section_fails_its_hash(tmp_path, monkeypatch):
    results = tmp_path / "RESULTS.md"
    monkeypatch.setattr(common, "RESULTS", results)
    monkeypatch.setattr(common, "machine", lambda: "Some CPU, 2 cores; avx2 yes, avx512f no, avx512_bf16 no, "
                                                   "amx_bf16 no; Python 3, torch 2")
    common.write_section("demo", "## Demo\n\n| a |\n| 1 |", script="bench/bleu.py")
    lines = BLOCK.search(results.read_text(encoding="utf-8")).group(3).rstrip().splitlines()
    check_recorded_line("demo", lines)  # as written: holds
    edited = [line.replace("| 1 |", "| 2 |") for line in lines]
    with pytest.raises(AssertionError, match="edited after its script wrote it"):
        check_recorded_line("demo", edited)
    with pytest.raises(AssertionError, match="does not name avx2"):
        check_recorded_line("demo", lines[:-1] + [lines[-1].replace("avx2 yes, ", "")])


def test_a_section_records_the_code_it_measured_and_stale_names_what_changed(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "RESULTS", tmp_path / "RESULTS.md")
    common.write_section("demo", "## Demo\n\n| a |\n| 1 |", script="bench/bleu.py")
    record = json.loads((tmp_path / "RESULTS.code.json").read_text(encoding="utf-8"))["demo"]
    assert record["script"] == "bench/bleu.py" and "bench/common.py" in record["files"]
    assert any(path.startswith("seqlab/") for path in record["files"])  # common imports seqlab.base.machine
    assert all(sha == common.file_sha256(path) for path, sha in record["files"].items())
    names = {"demo": "bench/bleu.py", "old": "bench/bleu.py"}
    assert stale.staleness({"demo": record}, names) == {
        "demo": None, "old": "recorded before sections kept the code they measured: run bench/bleu.py again"}
    changed = {**record, "files": {**record["files"], "bench/common.py": "0" * 64}}
    assert stale.staleness({"demo": changed}, {"demo": "bench/bleu.py"})["demo"].startswith(
        f"1 of its {len(record['files'])} files changed since {record['recorded']}: bench/common.py")


def test_stale_names_the_cpu_a_section_was_recorded_on():
    text = ("<!-- a:start bench/x.py -->\n## A\n\n_Recorded 2026-11-28 03:44 UTC; Intel(R) Xeon(R) Processor, 2 cores; "
            "avx2 yes, avx512f yes; capped to AVX2; Python 3.11.7, torch 2.13.0+cpu; body sha256 0._\n"
            "<!-- a:end -->\n<!-- b:start bench/y.py -->\n## B\n<!-- b:end -->\n")
    assert stale.recorded_on(text) == {"a": "Intel(R) Xeon(R) Processor, 2 cores; avx2 yes, avx512f yes; capped to AVX2"}
    assert stale.same_machine("AMD EPYC, 2 cores; avx2 yes", "AMD EPYC, 16 cores; avx2 yes")
    assert not stale.same_machine("AMD EPYC, 2 cores; avx2 yes", "AMD EPYC, 2 cores; avx2 yes; capped to AVX2")


def test_section_names_reads_constant_and_formatted_names(tmp_path):
    script = tmp_path / "x.py"
    script.write_text('write_section("bleu", md)\ncommon.write_section(f"generate-{slug}", md)\n', encoding="utf-8")
    assert section_names(script) == ["bleu", "generate-*"]


# docs/manual.md's table "What the presets reach": each row's figures are typed, so each is checked here against the
# section it comes from (a re-recorded section whose figures moved fails until the manual follows it).
MANUAL = ROOT / "docs" / "manual.md"
NUMBER = r"(\d[\d,]*(?:\.\d+)?)"


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _rows(text: str) -> list[list[str]]:
    """The cells of every table row of ``text`` (separator rows left out)."""
    return [_cells(line) for line in text.splitlines()
            if line.startswith("|") and not set(line.strip()) <= set("|-: ")]


def _table(section: str) -> list[list[str]]:
    """The table rows of section ``section``, bold marks dropped."""
    text = common.read_section(section)
    assert text is not None, f"section {section} is not in bench/RESULTS.md"
    return [[cell.replace("**", "") for cell in row] for row in _rows(text)]


def _row(section: str, first: str | None = None, index: int = 1) -> list[str]:
    """Row ``first`` (by its first cell) of section ``section``'s tables, else its ``index``-th table row (after
    the header)."""
    rows = _table(section)
    found = [row for row in rows if row[0] == first] if first else rows[index:index + 1]
    assert found, f"section {section} has no row {first or index}"
    return found[0]


def _leading(cell: str) -> float:
    """The number a cell starts with ("1.53 (gensim ...)", "35.9 s")."""
    return float(cell.split()[0])


def _manual_expectations() -> dict[tuple[str, str], list[tuple[str, str, float]]]:
    """(preset cell, data cell) -> [(cell name, pattern of the typed figure in it, the section's value)]."""
    expect: dict[tuple[str, str], list[tuple[str, str, float]]] = {}
    translations = (("`mt-transformer`", "Multi30k de→en", "translate-transformer-de-en"),
                    ("`mt-gru-attention`", "Multi30k de→en", "translate-seq2seq-attention-de-en"),
                    ("`mt-transformer` (3,200 steps)", "Multi30k en→de", "translate-transformer-en-de"))
    for preset, data, section in translations:
        steps, minutes, _test, _beam, bleu = _row(section)[:5]
        expect[preset, data] = [("test result", rf"BLEU {NUMBER}", float(bleu)),
                                ("training", rf"{NUMBER} min", float(minutes))]
        if "steps" in preset:
            expect[preset, data].append(("preset", rf"\({NUMBER} steps\)", float(steps)))
    for preset, data, task in (("`ner-minilm`", "CoNLL-2003", "ner"), ("`sentiment-minilm`", "SST-2 (sentences)",
                                                                       "sentiment")):
        row = _row("finetune", task)
        expect[preset, data] = [("test result", rf"{'entity F1' if task == 'ner' else 'accuracy'} {NUMBER}",
                                 float(row[5])), ("training", rf"{NUMBER} min", float(row[3]))]
    steps, minutes, _p, _r, f1 = _row("ner-lstm")[:5]
    expect["`ner-bilstm`", "CoNLL-2003"] = [("test result", rf"entity F1 {NUMBER}", float(f1)),
                                            ("training", rf"{NUMBER} min", float(minutes))]
    expect["`sentiment-lstm`", "SST-2 (sentences)"] = [("test result", rf"accuracy {NUMBER}",
                                                        float(_row("sentiment", "sst2-lstm")[4]))]
    scale = [row for row in _table("scale") if len(row) > 4]
    ratios = {row[1]: row for row in scale if row[2].isdigit()}  # the ratio table: its third column is the rounds
    seqlab = {row[1]: row for row in scale if row[2].startswith(f"seqlab {row[1]}:")}
    assert set(ratios) == set(seqlab) == {"sgns", "hs"}, "the scale section's word2vec tables changed shape"
    expect["`w2v-sgns`, `w2v-hs`", "enwiki sample repeated to 100 MB, 1 epoch"] = [
        ("test result", rf"whole command {NUMBER}x \(SGNS\)", _leading(ratios["sgns"][3])),
        ("test result", rf"/ {NUMBER}x \(HS\)", _leading(ratios["hs"][3])),
        ("test result", rf"training pass {NUMBER}x /", _leading(ratios["sgns"][4])),
        ("test result", rf"training pass [\d.]+x / {NUMBER}x", _leading(ratios["hs"][4])),
        ("training", rf"^{NUMBER} /", _leading(seqlab["sgns"][6])),
        ("training", rf"/ {NUMBER} s", _leading(seqlab["hs"][6]))]
    assert all(row[6].endswith("SimLex-999 yes") and "WordSim353 yes" in row[6] for row in ratios.values()), (
        "the manual says word2vec's vectors are within gensim's seed spread: the scale section no longer does")
    return expect


def _stands_for(typed: str, value: float) -> bool:
    """A figure typed with d decimals stands for ``value`` when within half a unit of its last digit."""
    decimals = len(typed.split(".")[1]) if "." in typed else 0
    return abs(float(typed.replace(",", "")) - value) <= 0.5 * 10 ** -decimals + 1e-9


def test_the_manuals_preset_table_matches_the_sections_it_cites():
    text = MANUAL.read_text(encoding="utf-8").split("What the presets reach", 1)[1].split("\n\n", 2)[1]
    table = {(row[0], row[1]): dict(zip(("preset", "data", "test result", "training"), row)) for row in _rows(text)[1:]}
    expect = _manual_expectations()
    assert set(table) == set(expect), "the manual's preset table and this test name different rows"
    wrong = []
    for key, figures in expect.items():
        for cell, pattern, value in figures:
            found = re.search(pattern, table[key][cell])
            assert found, f"manual row {key}: no figure {pattern!r} in its {cell} cell {table[key][cell]!r}"
            if not _stands_for(found.group(1), value):
                wrong.append(f"{key[0]} ({key[1]}), {cell}: {found.group(1)} typed, {value:g} in its section")
    assert not wrong, "docs/manual.md's preset table differs from bench/RESULTS.md:\n" + "\n".join(wrong)


def test_a_typed_figure_stands_for_its_value_within_half_its_last_digit():
    assert _stands_for("0.851", 0.8513) and _stands_for("7", 6.5) and _stands_for("3,200", 3200)
    assert not _stands_for("0.852", 0.8513) and not _stands_for("26", 28.9) and not _stands_for("1.62", 1.53)
