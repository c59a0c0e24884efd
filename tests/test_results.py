"""bench/RESULTS.md is written only by the bench scripts: every section sits in a start/end block whose start
marker names the script that writes it (bench/common.py ``write_section``), that script exists and writes a
section of that name, and nothing was typed in after the script's closing ``_Recorded ...`` line."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "RESULTS.md"
BLOCK = re.compile(r"<!-- (\S+?):start(?: (\S+))? -->\n(.*?)<!-- \1:end -->", re.S)


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
    outside = BLOCK.sub("", text)
    assert [line for line in outside.splitlines() if line.startswith("## ")] == []
    assert "<!--" not in outside, "a start or end marker without its pair"
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


def test_section_names_reads_constant_and_formatted_names(tmp_path):
    script = tmp_path / "x.py"
    script.write_text('write_section("bleu", md)\ncommon.write_section(f"generate-{slug}", md)\n', encoding="utf-8")
    assert section_names(script) == ["bleu", "generate-*"]
