"""``seqlab bleu``: output contract (docs/reference/cli.md, generated from ``seqlab bleu --help``), file reading as
sacreBLEU's CLI, and bad input."""

from __future__ import annotations

import io
import json

import pytest

import seqlab
from seqlab import cli
from seqlab.metrics import BLEU, corpus_bleu, sentence_bleu

# spec §1.11 E6 (segments reordered): 44.718135113554574, hyp_len 13, ref_len 14
HYPS = ["hello world !", "the cat is on the mat", "there is a dog"]
REFS = ["hello world", "there is a cat on the mat", "there is a dog here"]
REFS2 = ["hello , world", "the cat sits on the mat", "a dog is there"]
JSON_KEYS = {"name", "score", "signature", "verbose_score", "precisions", "bp", "sys_len", "ref_len"}


@pytest.fixture(autouse=True)
def bleu_verb(monkeypatch):
    """Register the verb even if cli.COMMANDS (owned by the lead) does not list it yet."""
    if "bleu" not in cli.COMMANDS:
        monkeypatch.setattr(cli, "COMMANDS", [*cli.COMMANDS, "bleu"])


def write(path, lines, newline="\n", prefix=""):
    path.write_text(prefix + "".join(line + newline for line in lines), encoding="utf-8", newline="")
    return str(path)


@pytest.fixture
def files(tmp_path):
    return write(tmp_path / "hyp.txt", HYPS), write(tmp_path / "ref.txt", REFS), write(tmp_path / "ref2.txt", REFS2)


def run(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main(["bleu", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_default_is_one_line_with_unrounded_score(capsys, files):
    hyp, ref, _ = files
    code, out, err = run(capsys, hyp, ref)
    assert (code, err) == (0, "")
    assert out.count("\n") == 1
    result = json.loads(out)
    assert JSON_KEYS <= set(result)
    expected = corpus_bleu(HYPS, [REFS])
    assert result["name"] == "BLEU"
    assert result["score"] == expected.score == 44.718135113554574
    assert (result["precisions"], result["bp"]) == (expected.precisions, expected.bp)
    assert (result["sys_len"], result["ref_len"]) == (13, 14)
    assert result["signature"] == f"nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:{seqlab.__version__}"
    assert result["verbose_score"] == expected.verbose_score
    assert (result["nrefs"], result["tok"], result["version"]) == ("1", "13a", seqlab.__version__)


def test_text_format_is_sacrebleus_line(capsys, files):
    hyp, ref, _ = files
    code, out, _ = run(capsys, hyp, ref, "--format", "text")
    sig = f"nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:{seqlab.__version__}"
    assert code == 0
    assert out == f"BLEU|{sig} = 44.7 84.6/60.0/42.9/25.0 (BP = 0.926 ratio = 0.929 hyp_len = 13 ref_len = 14)\n"
    sacrebleu = pytest.importorskip("sacrebleu")
    theirs = sacrebleu.metrics.BLEU().corpus_score(HYPS, [REFS])
    assert out == theirs.format(width=1, signature=sig) + "\n"  # what `sacrebleu -f text` prints
    _, out, _ = run(capsys, hyp, ref, "--format", "text", "--width", "3")
    assert out.startswith(f"BLEU|{sig} = 44.718 ")


def test_options_and_multiple_references(capsys, files):
    hyp, ref, ref2 = files
    code, out, _ = run(capsys, hyp, ref, ref2, "--tokenize", "intl", "--smooth-method", "floor",
                       "--smooth-value", "0.01", "--lowercase")
    result = json.loads(out)
    expected = BLEU(tokenize="intl", smooth_method="floor", smooth_value=0.01, lowercase=True).corpus_score(
        HYPS, [REFS, REFS2])
    assert code == 0 and result["score"] == expected.score
    assert result["signature"].startswith("nrefs:2|case:lc|eff:no|tok:intl|smooth:floor[0.01]|version:")


def test_sentence_level_prints_one_line_per_segment(capsys, files):
    hyp, ref, _ = files
    code, out, _ = run(capsys, hyp, ref, "--sentence-level")
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and len(lines) == 3
    for line, h, r in zip(lines, HYPS, REFS):
        assert line["score"] == sentence_bleu(h, [r]).score  # effective order on, as sacrebleu -sl
        assert "|eff:yes|" in line["signature"]
    _, out, _ = run(capsys, hyp, ref, "--sentence-level", "--format", "text")
    assert [line.split(" = ")[1].split()[0] for line in out.splitlines()] == [
        f"{sentence_bleu(h, [r]).score:.1f}" for h, r in zip(HYPS, REFS)]


def test_files_are_read_as_sacrebleu_reads_them(capsys, tmp_path, files, monkeypatch):
    """BOM kept as text, CRLF and trailing blanks stripped, no newline at the end is fine, - is stdin."""
    _, ref, _ = files
    bom = write(tmp_path / "bom.txt", HYPS, prefix="\ufeff")
    _, out, _ = run(capsys, bom, ref)
    assert json.loads(out)["score"] == corpus_bleu(["\ufeff" + HYPS[0], *HYPS[1:]], [REFS]).score
    assert json.loads(out)["score"] != corpus_bleu(HYPS, [REFS]).score
    crlf = write(tmp_path / "crlf.txt", [h + "  " for h in HYPS], newline="\r\n")
    (tmp_path / "nonl.txt").write_text("\n".join(HYPS), encoding="utf-8")
    expected = corpus_bleu(HYPS, [REFS]).score
    for path in [crlf, str(tmp_path / "nonl.txt")]:
        _, out, _ = run(capsys, path, ref)
        assert json.loads(out)["score"] == expected
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO("\n".join(HYPS).encode())))
    _, out, _ = run(capsys, "-", ref)
    assert json.loads(out)["score"] == expected


def assert_one_error_line(code, out, err, *fragments):
    assert code == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1
    for fragment in fragments:
        assert fragment in err


def test_different_line_counts_name_both_counts(capsys, tmp_path, files):
    hyp, _, _ = files
    short = write(tmp_path / "short.txt", REFS[:2])
    assert_one_error_line(*run(capsys, hyp, short), "has 3 lines", "has 2", "short.txt")


@pytest.mark.parametrize("case", ["missing", "directory", "latin1", "empty"])
def test_unreadable_input_is_one_error_line(capsys, tmp_path, files, case):
    hyp, ref, _ = files
    bad = tmp_path / "bad.txt"
    if case == "directory":
        bad.mkdir()
    elif case == "latin1":
        bad.write_bytes("café\n".encode("latin-1"))
    elif case == "empty":
        bad.write_bytes(b"")
    expected = {"missing": "no such file", "directory": "is a directory", "latin1": "not UTF-8",
                "empty": "is empty"}[case]
    assert_one_error_line(*run(capsys, str(bad), ref), str(bad), expected)


def test_bad_option_values_exit_2(capsys, files):
    hyp, ref, _ = files
    assert_one_error_line(*run(capsys, hyp, ref, "--smooth-method", "floor", "--smooth-value", "-1"),
                          "smooth_value must be")
    with pytest.raises(SystemExit) as exit_info:  # argparse refuses unknown choices
        cli.main(["bleu", hyp, ref, "--tokenize", "zh"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "invalid choice: 'zh'" in err


def test_the_docs_say_the_signature_carries_seqlabs_version():
    """The manual and the tutorial do not call the signature sacreBLEU's own: its version: field is seqlab's
    (DESIGN.md), as translation evaluate and seqlab bleu print it (issue #52)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    assert corpus_bleu(["a cat"], [["a cat"]]).signature.endswith(f"version:{seqlab.__version__}")
    for page in ("docs/manual.md", "docs/tutorials/05-seq2seq-attention.md"):
        text = " ".join((root / page).read_text(encoding="utf-8").split())
        assert "smoothing, signature)" not in text and "smoothing and signature" not in text, page
        assert "seqlab's" in text[text.index("sacreBLEU-identical BLEU" if "manual" in page else
                                             "seqlab's BLEU is sacreBLEU's"):][:300], page
