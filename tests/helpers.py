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

    from seqlab.base.config import TrainConfig
    from seqlab.training.trainer import Trainer

    cfg = TrainConfig(epochs=epochs, lr=lr, min_lr=min_lr, progress=False)
    with tempfile.TemporaryDirectory() as run_dir:
        Trainer(task, cfg, run_dir, log=lambda *a, **k: None).fit()
        lines = (Path(run_dir) / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


# ------------------------------------------------------------------------------------------------------
# tiny runs of every task, for the `seqlab serve` tests (a few steps each: seconds in all)

SERVE_WORDS = ["the", "a", "cat", "dog", "sees", "runs", "big", "old", "near", "with"]
SERVE_NAMES = ["Paris", "Anna", "Bonn", "Kim", "Oslo"]
SERVE_DICT = {"the": "der", "a": "ein", "cat": "katze", "dog": "hund", "sees": "sieht", "runs": "läuft",
              "big": "gross", "old": "alt", "near": "nahe", "with": "mit"}


def _fast(*extra: str) -> list[str]:
    return ["train.progress=false", "train.device=cpu", "train.threads=1", *extra]


def train_serve_runs(root, data) -> dict:
    """Train an lm-char, a tagger, a classifier, a translator, an embedding run and a forecaster (a few steps
    each) under ``root``; ``data`` is a folder for their input files. Returns {task kind: run id}."""
    import math
    import random

    from pathlib import Path

    root, data = Path(root), Path(data)
    data.mkdir(parents=True, exist_ok=True)
    quiet = {"log": lambda *a, **k: None}
    rng = random.Random(0)

    def sentence(n_min=3, n_max=6):
        return [rng.choice(SERVE_WORDS) for _ in range(rng.randint(n_min, n_max))]

    text = "".join(" ".join(sentence()).capitalize() + ". " for _ in range(400))
    (data / "lm.txt").write_text(text, encoding="utf-8")
    api.train_run("lm-char", root / "lm", overrides=_fast(
        f"data.source={data / 'lm.txt'}", "model.n_layers=2", "model.n_heads=2", "model.d_model=16", "model.d_ff=32",
        "model.max_len=24", "train.max_steps=6", "train.batch_size=4", "train.eval_every=3", "train.save_every=3",
        "train.warmup_steps=1", "train.eval_batches=2"), **quiet)

    tagged = [[(w, "O") for w in sentence(1, 3)] + [(rng.choice(SERVE_NAMES), "B-PER")] + [(w, "O") for w in sentence(1, 3)]
              for _ in range(60)]
    files = {s: write_conll(data / f"ner.{s}.txt", part) for s, part in
             (("train", tagged[:40]), ("valid", tagged[40:50]), ("test", tagged[50:]))}
    api.train_run("ner-bilstm", root / "ner", overrides=_fast(
        *(f"data.{s}={p}" for s, p in files.items()), "data.min_freq=1", "model.n_layers=1", "model.d_model=8",
        "model.hidden_size=8", "model.dropout=0", "train.max_steps=40", "train.batch_size=8", "train.lr=3e-2",
        "train.eval_every=20", "train.save_every=20", "train.warmup_steps=1"), **quiet)  # learns the names

    labelled = [(" ".join(s), "pos" if "cat" in s else "neg") for s in (sentence() for _ in range(60))]
    for split, part in (("train", labelled[:40]), ("valid", labelled[40:50]), ("test", labelled[50:])):
        (data / f"cls.{split}.tsv").write_text("sentence\tlabel\n" + "".join(f"{s}\t{y}\n" for s, y in part))
    api.train_run("sentiment-lstm", root / "sentiment", overrides=_fast(
        *(f"data.{s}={data / f'cls.{s}.tsv'}" for s in ("train", "valid", "test")), "model.d_model=8",
        "model.hidden_size=8", "model.dropout=0", "train.max_steps=4", "train.batch_size=8", "train.eval_every=2",
        "train.save_every=2", "train.warmup_steps=1"), **quiet)

    for split, n in (("train", 60), ("valid", 8), ("test", 8)):
        src = [" ".join(sentence()) for _ in range(n)]
        (data / f"mt.{split}.en").write_text("".join(s + "\n" for s in src), encoding="utf-8")
        (data / f"mt.{split}.de").write_text("".join(" ".join(SERVE_DICT[w] for w in s.split()) + "\n" for s in src),
                                             encoding="utf-8")
    api.train_run("mt-transformer", root / "mt", overrides=_fast(
        *(f"data.{s}={data / f'mt.{s}'}" for s in ("train", "valid", "test")), "data.src=en", "data.tgt=de",
        "data.tokenizer=word", "model.n_layers=1", "model.n_heads=2", "model.d_model=16", "model.d_ff=32",
        "model.max_len=16", "model.dropout=0", "train.max_steps=4", "train.batch_size=8", "train.eval_every=2",
        "train.save_every=2", "train.warmup_steps=1"), **quiet)

    (data / "w2v.txt").write_text("".join(" ".join(sentence(4, 9)) + "\n" for _ in range(300)), encoding="utf-8")
    api.train_run("w2v-sgns", root / "w2v", overrides=_fast(
        f"data.source={data / 'w2v.txt'}", "data.min_freq=1", "model.dim=8", "model.window=2", "train.epochs=1"),
        **quiet)

    (data / "sine.csv").write_text("".join(f"{math.sin(2 * math.pi * t / 20)!r}\n" for t in range(200)))
    api.train_run("forecast-lstm", root / "forecast", overrides=_fast(
        f"data.source={data / 'sine.csv'}", "model.max_len=8", "model.hidden_size=8", "train.max_steps=4",
        "train.batch_size=8", "train.eval_every=2", "train.save_every=2", "train.warmup_steps=1"), **quiet)
    label = root.resolve().name
    return {kind: f"{label}/{name}" for kind, name in (("lm", "lm"), ("tag", "ner"), ("classify", "sentiment"),
                                                        ("translate", "mt"), ("embed", "w2v"), ("forecast", "forecast"))}


class PoisonedTask:
    """A linear regression whose loss turns NaN at a chosen step."""

    def __init__(self, poison_at: int):
        torch.manual_seed(0)
        self.model = torch.nn.Linear(4, 1)
        self.train_tokens = 1000
        self.poison_at, self.calls = poison_at, 0

    def train_batch(self, generator, n):
        x = torch.randn(n, 4, generator=generator)
        return x, x.sum(-1, keepdim=True)

    def shard(self, batch, rank, world):
        return batch

    def count(self, batch):
        return batch[0].size(0)

    def loss_sum(self, model, batch, device):
        self.calls += 1
        loss = ((model(batch[0]) - batch[1]) ** 2).sum()
        return loss * float("nan") if self.calls == self.poison_at else loss

    def validate(self, model, device, max_batches):
        return {"loss": 0.0}
