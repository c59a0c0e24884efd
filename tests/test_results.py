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
