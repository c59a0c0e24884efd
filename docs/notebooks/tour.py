# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # A tour of seqlab from Python
#
# Every task trains from data held in memory, returns the trained object, and answers with plain Python values.
# The sizes here are tiny so that the whole tour runs in a minute on a laptop CPU (CI runs it as a notebook in a
# Jupyter kernel, `tests/test_notebooks.py`); raise `max_steps` and the model sizes for real results.
#
# `seqlab.train(PRESET, train_data=..., config={...})` writes a run directory (under `runs/` unless `out=` is
# given) and returns the object `seqlab.load(run_dir)` returns. `config` holds sections of keys, checked as
# `seqlab train --set` checks them: a misspelt or unused key is an error naming the valid ones.

# %%
import numpy as np

import seqlab

quiet = {"progress": False, "device": "cpu"}
tiny_transformer = {"n_layers": 1, "n_heads": 2, "d_model": 32, "d_ff": 64, "max_len": 32}
rng = np.random.default_rng(0)
words = ["the", "a", "cat", "dog", "sees", "chases", "big", "small", "near", "with"]


def sentence(n=5):
    return " ".join(rng.choice(words, size=n))


# %% [markdown]
# ## Language modelling: a string in, a model that generates and scores text

# %%
text = " ".join(sentence().capitalize() + "." for _ in range(600))
lm = seqlab.train("lm-char", out="runs/tour-lm", force=True, train_data=text,
                  config={"model": tiny_transformer,
                          "train": {"max_steps": 30, "batch_size": 8, "eval_every": 10, "warmup_steps": 5, **quiet}})
print(lm, lm.metrics[-1])
print(repr(lm.generate("The cat ", max_new_tokens=40, temperature=0.8, seed=0)))
scores = lm.score("The cat sees a dog.")
print(f"perplexity {scores.perplexity:.2f} over {len(scores.tokens)} characters")
print(lm.evaluate("test"))

# %% [markdown]
# Attention maps are NamedTuples that plot themselves (a notebook shows `.plot()`'s figure inline):

# %%
attention = lm.attention("The cat sees a dog.")
figure = attention.plot()
figure.savefig("runs/tour-attention.png")

# %% [markdown]
# ## Save and load a bare model (no run directory needed)

# %%
saved = lm.save("runs/tour-lm-saved", force=True)
again = seqlab.load(saved)
assert again.generate("The ", max_new_tokens=10, seed=1) == lm.generate("The ", max_new_tokens=10, seed=1)

# %% [markdown]
# ## Tagging: sentences of (token, tag) pairs

# %%
cities = ["Paris", "Oslo", "Bonn"]
tagged = [[(w, "O") for w in sentence(3).split()] + [(str(rng.choice(cities)), "B-LOC")] for _ in range(80)]
tagger = seqlab.train("ner-bilstm", out="runs/tour-ner", force=True, train_data=tagged[:60],
                      valid_data=tagged[60:70], test_data=tagged[70:],
                      config={"data": {"min_freq": 1}, "model": {"n_layers": 1, "d_model": 16, "hidden_size": 16},
                              "train": {"max_steps": 80, "batch_size": 8, "lr": 3e-2, "eval_every": 40, **quiet}})
print(tagger.tag("the dog sees Oslo"))
print(tagger.entities(["the cat near Paris", "a dog"]))
print(tagger.evaluate(data=tagged[70:]))

# %% [markdown]
# ## Classification: (text, label) pairs

# %%
labelled = [(s, "cat" if "cat" in s else "other") for s in (sentence() for _ in range(80))]
classifier = seqlab.train("sentiment-lstm", out="runs/tour-cls", force=True, train_data=labelled,
                          config={"model": {"d_model": 16, "hidden_size": 16},
                                  "train": {"max_steps": 20, "batch_size": 8, "eval_every": 10, **quiet}})
print(classifier.classify(["the cat sees a dog", "a dog near the dog"]))

# %% [markdown]
# ## Translation: (source, target) pairs

# %%
upper = [(s, s.upper()) for s in (sentence(4) for _ in range(120))]
translator = seqlab.train("mt-transformer", out="runs/tour-mt", force=True, train_data=upper,
                          config={"data": {"tokenizer": "word"}, "model": tiny_transformer,
                                  "train": {"max_steps": 20, "batch_size": 16, "eval_every": 10, **quiet}})
print(translator.translate(["the cat sees a dog"], beam=2))
source, target, weights = translator.attention("the cat sees a dog", beam=2)

# %% [markdown]
# ## Word vectors: token lists, gensim's verbs

# %%
vectors = seqlab.train("w2v-sgns", out="runs/tour-w2v", force=True,
                       train_data=(sentence(8).split() for _ in range(400)),  # a generator is read once
                       config={"data": {"min_freq": 1}, "model": {"dim": 16, "window": 2}, "train": {"epochs": 1, "progress": False}})
print(vectors.most_similar("cat", topn=3), vectors.similarity("cat", "dog"))
print(vectors.analogy("cat", "dog", "big", topn=2))
print(vectors.map(n_words=10, method="pca").coords.shape)

# %% [markdown]
# ## Forecasting: a 1-D series, and a new history to continue

# %%
series = np.sin(np.arange(300) / 5.0) + 0.05 * rng.standard_normal(300)
forecaster = seqlab.train("forecast-lstm", out="runs/tour-fc", force=True, train_data=series,
                          config={"model": {"max_len": 16, "hidden_size": 16},
                                  "train": {"max_steps": 30, "batch_size": 16, "eval_every": 10, **quiet}})
print(forecaster.forecast(5))  # after the end of the series
print(forecaster.forecast(5, split="test"))  # after train + valid: the held-out tail's forecast
print(forecaster.forecast(5, history=series[:100]))
ar = seqlab.train("ar", out="runs/tour-ar", force=True, train_data=series, config={"train": {"progress": False}})
print(ar.forecast(5), ar.evaluate("test"))
print(forecaster.predict_next(series[:100]), ar.predict_next(series[:100]))  # one verb for both
fig = ar.plot()  # a matplotlib Figure (a notebook shows `ar` itself as this plot)

# %% [markdown]
# ## Callbacks: watch training, or stop it (returning False saves a checkpoint; `resume=True` continues)


# %%
class StopAt:
    def __init__(self, step):
        self.step, self.losses = step, []

    def on_step(self, row):
        self.losses.append(row["loss"])
        return row["step"] < self.step


watcher = StopAt(10)
lm = seqlab.train("lm-char", out="runs/tour-stop", force=True, train_data=text, callbacks=[watcher],
                  config={"model": tiny_transformer, "train": {"max_steps": 20, "batch_size": 8, **quiet}})
lm = seqlab.train("lm-char", out="runs/tour-stop", resume=True, train_data=text,
                  config={"model": tiny_transformer, "train": {"max_steps": 20, "batch_size": 8, **quiet}})
print(len(watcher.losses), lm.metrics[-1]["step"])
