"""CLI start-up: the verbs that need no model import neither torch nor scikit-learn (issue #16).

Each check runs in a fresh interpreter (this test process has torch loaded already) and looks at
``sys.modules`` after the import or the verb. Wall times are not asserted here (the machine's speed
swings); ``bench/cli_startup.py`` measures them against sacreBLEU's CLI.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "sklearn")

# Runs seqlab.cli.main(argv) (stdout captured, exit code kept), then prints one JSON line on the
# real stdout: the exit code and which heavy modules ended up in sys.modules.
RUNNER = """\
import contextlib, io, json, sys
argv = json.loads(sys.argv[1])
out = io.StringIO()
with contextlib.redirect_stdout(out):
    if argv is None:
        import seqlab.metrics.bleu
        rc = 0
    else:
        from seqlab.cli import main
        try:
            rc = main(argv)
        except SystemExit as e:  # --help and --version exit through argparse
            rc = e.code
print(json.dumps({"rc": rc, "out": out.getvalue(), "loaded": [m for m in %r if m in sys.modules]}))
""" % (HEAVY,)


def run_isolated(argv: list[str] | None) -> dict:
    """Run the verb ``argv`` (None: ``import seqlab.metrics.bleu``) in a fresh interpreter."""
    done = subprocess.run([sys.executable, "-c", RUNNER, json.dumps(argv)], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def bleu_files(tmp_path_factory) -> list[str]:
    folder = tmp_path_factory.mktemp("bleu")
    (folder / "hyp.txt").write_text("The cat sat on the mat.\nHello, world!\n", encoding="utf-8")
    (folder / "ref.txt").write_text("The cat is on the mat.\nHello world!\n", encoding="utf-8")
    return [str(folder / "hyp.txt"), str(folder / "ref.txt")]


def test_import_bleu_loads_neither_torch_nor_sklearn():
    assert run_isolated(None)["loaded"] == []


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["presets"], ["data", "list"], ["bleu", "--help"]],
                         ids=["help", "version", "presets", "data-list", "bleu-help"])
def test_model_free_verbs_load_neither_torch_nor_sklearn(argv):
    result = run_isolated(argv)
    assert result["rc"] == 0
    assert result["out"]
    assert result["loaded"] == [], f"`seqlab {' '.join(argv)}` imported {result['loaded']}"


def test_seqlab_bleu_loads_neither_torch_nor_sklearn(bleu_files):
    for extra in ([], ["--format", "text"], ["--sentence-level"]):
        result = run_isolated(["bleu", *bleu_files, *extra])
        assert result["rc"] == 0
        assert "BLEU" in result["out"]
        assert result["loaded"] == [], f"`seqlab bleu {' '.join(extra)}` imported {result['loaded']}"


def test_python_m_seqlab_bleu_end_to_end(bleu_files):
    """The real entry point, as users run it: one JSON line, the same score as the library."""
    from seqlab.metrics.bleu import corpus_bleu

    done = subprocess.run([sys.executable, "-m", "seqlab", "bleu", *bleu_files], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    hyps, ref = (Path(p).read_text(encoding="utf-8").splitlines() for p in bleu_files)
    assert json.loads(done.stdout)["score"] == corpus_bleu(hyps, [ref]).score
