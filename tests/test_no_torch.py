"""The word-embedding commands run where torch cannot be imported (issue #41, item 4).

`seqlab train w2v-sgns | w2v-hs | glove` (the numba engines on the CPU, through the one Trainer, a resume
included), `seqlab data prepare` of those presets (refused: their data is prepared in the run), writing vectors
in word2vec's text and binary formats, `seqlab neighbors` and `seqlab analogy` run in one subprocess whose
import system refuses `torch` and every `torch.*` module, at tiny sizes; the outputs are checked here. A second
subprocess, with torch installed and importable, imports every module those commands use and finds no torch in
``sys.modules``: a top-level `import torch` anywhere on that path fails it (this process has torch loaded, so
both checks run apart from it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

# Refuses torch (as an environment without it would), then runs each seqlab command of argv (a JSON list of
# argument lists; a list starting with "save-binary" writes a run's vectors in the binary format instead)
# and prints one JSON line: the exit codes, stderr's last lines of each, and whether torch got in.
RUNNER = r"""
import contextlib, io, json, sys

class NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError(f"No module named {name!r} (refused by tests/test_no_torch.py)")
        return None

sys.meta_path.insert(0, NoTorch())
from seqlab.cli import main

results = []
for argv in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        if argv[0] == "save-binary":
            from seqlab.api import open_vectors
            open_vectors(argv[1]).save_word2vec_format(argv[2], binary=True)
            rc = 0
        else:
            rc = main(argv)
    results.append({"argv": argv, "rc": rc, "out": out.getvalue(), "err": err.getvalue()[-2000:]})
print(json.dumps({"results": results, "torch": sorted(m for m in sys.modules if m.split(".")[0] == "torch")[:3]}))
"""

# the modules the embedding commands import, the verbs' parsers built as `seqlab --help` builds them
MODULES = ("seqlab", "seqlab.cli", "seqlab.api", "seqlab.commands.train", "seqlab.commands.data",
           "seqlab.commands.neighbors", "seqlab.commands.analogy", "seqlab.tasks.word_vectors", "seqlab.tasks.trained",
           "seqlab.training.trainer", "seqlab.training.checkpoint", "seqlab.training.rundir",
           "seqlab.training.devices", "seqlab.training.optim", "seqlab.training.report", "seqlab.training.callbacks",
           "seqlab.models.word2vec", "seqlab.models.glove", "seqlab.models.arrays", "seqlab.models.word2vec_kernels",
           "seqlab.models.word2vec_tables", "seqlab.data.corpus", "seqlab.data.sources", "seqlab.views.viz",
           "seqlab.vectors.keyed", "seqlab.vectors.formats", "seqlab.vectors.start")


def _topics(path: Path, sentences: int = 1200, seed: int = 0) -> Path:
    """Sentences each drawn from one topic's 8 words (as tests/test_word2vec.py's corpus, smaller)."""
    rng = np.random.default_rng(seed)
    lines = (" ".join(f"t{t}w{i}" for i in rng.integers(0, 8, 10)) for t in rng.integers(0, 6, sentences))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _sets(corpus: Path, *extra: str) -> list[str]:
    keys = [f"data.source={corpus}", "data.min_freq=1", "model.dim=8", "model.window=2", "train.threads=1",
            "train.progress=false", "train.epochs=2", *extra]
    return [arg for key in keys for arg in ("--set", key)]


def test_embedding_commands_run_without_torch(tmp_path):
    corpus = _topics(tmp_path / "topics.txt")
    runs = {name: tmp_path / name for name in ("w2v-sgns", "w2v-hs", "glove")}
    binary = tmp_path / "vectors.bin"
    commands = [
        # a time budget spent at the first step: a checkpoint, then --resume restores it (numpy weights and state)
        ["train", "w2v-sgns", *_sets(corpus, "train.max_minutes=1e-9"), "--out", str(runs["w2v-sgns"])],
        ["train", "w2v-sgns", *_sets(corpus), "--out", str(runs["w2v-sgns"]), "--resume"],
        ["train", "w2v-hs", *_sets(corpus), "--out", str(runs["w2v-hs"])],
        ["train", "glove", *_sets(corpus), "--out", str(runs["glove"])],
        ["data", "prepare", "w2v-sgns", *_sets(corpus), "--out", str(tmp_path / "prepared"), "--no-progress"],
        ["save-binary", str(runs["w2v-hs"]), str(binary)],
        ["neighbors", str(runs["w2v-sgns"]), "t0w1", "-k", "3"],
        ["neighbors", str(runs["glove"]), "t2w3", "-k", "3"],
        ["neighbors", str(binary), "t1w1", "-k", "3"],
        ["analogy", str(runs["w2v-hs"] / "vectors.txt"), "t0w0", "t0w1", "t4w0", "-k", "2"],
    ]
    done = subprocess.run([sys.executable, "-c", RUNNER, json.dumps(commands)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["torch"] == []
    results = report["results"]
    for r in results:
        expected = 2 if r["argv"][:2] == ["data", "prepare"] else 0
        assert r["rc"] == expected, f"{' '.join(r['argv'][:2])}: exit {r['rc']}\n{r['err']}"
    assert "max_minutes reached" in results[0]["err"] and "resumed from step" in results[1]["err"]
    assert 'task.kind = "embed"' in results[4]["err"] and not (tmp_path / "prepared").exists()
    for name, run in runs.items():
        for file in ("vectors.txt", "model.safetensors", "trainer.safetensors", "state.json", "vocab.json",
                     "metrics.jsonl", "plots/loss.png"):
            assert (run / file).is_file(), f"{name}: no {file}"
        assert json.loads((run / "state.json").read_text())["step"] == 2
        assert len((run / "vectors.txt").read_text().splitlines()) == 1 + 48  # the header, then 6 topics x 8 words
    assert binary.read_bytes().startswith(b"48 8\n")
    for r in results[6:9]:
        neighbours = [line.split("\t")[0] for line in r["out"].splitlines()]
        assert len(neighbours) == 3 and all(w.startswith("t") for w in neighbours), r["out"]
    assert len(results[9]["out"].splitlines()) == 2


def test_the_embedding_path_imports_no_torch():
    """Importing what the embedding commands use (and building every verb's parser) loads no torch, where
    torch is installed: a top-level `import torch` on that path fails here."""
    code = (f"import importlib, sys\nfor name in {MODULES!r}:\n    importlib.import_module(name)\n"
            "from seqlab.cli import build_parser\nbuild_parser()\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'torch')[:3])")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[-1] == "[]", f"torch was imported: {done.stdout.splitlines()[-1]}"
