"""Helpers shared by several test modules (imported as ``from helpers import ...``; pytest puts tests/ on the path)."""

from __future__ import annotations

import torch

from seqlab import api


def write_conll(path, sentences) -> str:
    """CoNLL-2003 layout (word POS chunk tag), one blank line between sentences; returns the path as a string."""
    lines = ["-DOCSTART- -X- -X- O", ""]
    for s in sentences:
        lines += [f"{w} NN O {t}" for w, t in s] + [""]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def assert_same_weights(run_a, run_b) -> None:
    """The final models of two run directories are bit-identical, tensor by tensor."""
    a, b = api.load(run_a, device="cpu", last=True).model, api.load(run_b, device="cpu", last=True).model
    for (name, p), q in zip(a.state_dict().items(), b.state_dict().values()):
        assert torch.equal(p, q), name


def train_epochs(task, epochs: int, lr: float, min_lr: float = 0.0) -> list[dict]:
    """Train a kernel task (word2vec's SkipGramSGD, GloVeAdaGrad) for whole epochs through the Trainer, in a
    temporary run directory; returns the per-epoch training rows of its metrics.jsonl."""
    import json
    import tempfile
    from pathlib import Path

    from seqlab.config import TrainConfig
    from seqlab.trainer import Trainer

    cfg = TrainConfig(epochs=epochs, lr=lr, min_lr=min_lr, progress=False)
    with tempfile.TemporaryDirectory() as run_dir:
        Trainer(task, cfg, run_dir, log=lambda *a, **k: None).fit()
        lines = (Path(run_dir) / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]
