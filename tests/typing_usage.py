"""The public API as a notebook user calls it, for mypy to check (tests/test_typing.py); never run, and not
collected by pytest (no ``test_`` prefix). ``seqlab.train`` and ``seqlab.load`` return a
:class:`~seqlab.Trained` (the task is a config value, not a type), so a user narrows it with ``isinstance``
(or ``typing.cast``) before calling a task's verbs."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import numpy as np

import seqlab

FAST = {"train": {"progress": False, "device": "cpu", "max_steps": 6}}

lm = seqlab.train("lm-char", train_data="The cat sat on the mat. " * 100, config=FAST)
assert isinstance(lm, seqlab.LanguageModel)
text: str = lm.generate("The ", max_new_tokens=20, seed=0)
texts: list[str] = lm.generate(["The ", "A "], temperature=0.8)
scores = lm.score("the cat sat")
assert isinstance(scores, seqlab.TokenScores)
perplexity: float = scores.perplexity
held_out: dict[str, float] = lm.evaluate(data=["the dog sat on the mat"])
saved: Path = lm.save("my-lm", force=True)
steps: list[int] = [row["step"] for row in lm.metrics]
again: seqlab.Trained = seqlab.load(saved)
names: list[str] = seqlab.presets()
defaults: dict[str, dict[str, object]] = seqlab.preset_config("ner-bilstm-crf")
requeued: seqlab.Trained = seqlab.train("lm-char", "runs/requeued", train_data="The cat. " * 100, config=FAST,
                                        resume="auto")

tagger = seqlab.load("runs/ner")
assert isinstance(tagger, seqlab.SequenceTagger)
for pairs in tagger.tag(["EU rejects German call", "Peter Blackburn"]):
    print(pairs)
entities = tagger.entities("EU rejects German call")

classifier = cast(seqlab.SentenceClassifier, seqlab.load("runs/sentiment"))
probabilities = classifier.classify("a fine film")
assert isinstance(probabilities, dict)
best: str = max(probabilities, key=probabilities.__getitem__)

translator = seqlab.load("runs/mt")
assert isinstance(translator, seqlab.Translator)
german = translator.translate("the cat", beam=4)
print(german if isinstance(german, str) else german[0])

forecaster = seqlab.load("runs/forecast")
assert isinstance(forecaster, seqlab.Forecaster)
future: np.ndarray = forecaster.forecast(5, history=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
from_test: np.ndarray = forecaster.forecast(5, split="test")
tomorrow: float = forecaster.predict_next(np.arange(8.0))

vectors = seqlab.load("runs/w2v")
assert isinstance(vectors, seqlab.Embeddings)
neighbours: list[tuple[str, float]] = vectors.most_similar("cat", topn=5)
kv: seqlab.KeyedVectors = seqlab.open_vectors("runs/w2v")
