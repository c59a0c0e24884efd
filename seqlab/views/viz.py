"""Plots: loss curves, attention heatmaps (the notes' "your cat is a lovely cat" matrix), embedding maps.

Every figure is a matplotlib ``Figure`` made with the object API (:func:`new_figure`), never through pyplot or
``matplotlib.use``: a library call leaves the caller's backend (a notebook's inline one) as it was, and
``savefig`` renders with Agg whatever that backend is. Each figure is written atomically (temporary file +
rename), and an ``--out`` path's missing parent folders are created. The ``*_figure`` builders return the Figure
itself, for the notebook results of :mod:`seqlab.tasks.results`; the ``plot_*`` functions write them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from seqlab.base.io import atomic_path, read_metrics


def save_figure(fig, path: str | Path) -> Path:
    """Write ``fig`` to ``path`` (the format from its suffix); a Figure outside pyplot has nothing to close."""
    with atomic_path(path) as tmp:  # same suffix: matplotlib picks the format from it
        fig.savefig(tmp, dpi=120, bbox_inches="tight")
    return Path(path)


def plot_loss(metrics_path: str | Path, out: str | Path, chosen_step: int | None = None) -> Path | None:
    """Training and validation loss against the step, from a run's metrics.jsonl; ``chosen_step`` (the best
    checkpoint, what readers load) is marked on the validation curve."""
    rows = read_metrics(metrics_path)
    train = [(r["step"], r["loss"]) for r in rows if r.get("split") == "train"]
    valid = [(r["step"], r["loss"]) for r in rows if r.get("split") == "valid"]
    if not train and not valid:
        return None
    fig = new_figure((6, 4))
    ax = fig.subplots()
    if train:
        ax.plot(*zip(*train), label="train", lw=1)
    if valid:
        ax.plot(*zip(*valid), "o-", label="valid", lw=1.5, ms=3)
        chosen = [(s, loss) for s, loss in valid if s == chosen_step]
        if chosen:
            ax.axvline(chosen[0][0], color="grey", ls=":", lw=1)
            ax.plot(*chosen[0], "*", color="crimson", ms=12, label=f"best checkpoint (step {chosen_step})")
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats per token)")
    ax.grid(alpha=0.3)
    ax.legend()
    return save_figure(fig, out)


def new_figure(figsize: tuple[float, float]):
    """A matplotlib Figure outside pyplot's state: nothing to close, no backend switched (a notebook keeps its
    own), shown inline by Jupyter and written with :func:`save_figure`."""
    from matplotlib.figure import Figure

    return Figure(figsize=figsize)


def figure_png(fig) -> bytes:
    """The PNG bytes of a figure, for ``_repr_png_`` (what Jupyter shows inline)."""
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120, bbox_inches="tight")
    return buffer.getvalue()


def attention_figure(tokens_q: list[str], tokens_k: list[str], weights: np.ndarray | list,
                     titles: list[str] | None = None, cols: int = 4):
    """One heatmap per (layer, head): queries down, keys across, rows summing to 1; a Figure.

    ``weights`` is (maps, seq_q, seq_k); ``titles`` names each map (e.g. "layer 0 head 1").
    """
    w = np.asarray(weights, dtype=float)
    if w.ndim == 2:
        w = w[None]
    n = w.shape[0]
    cols = min(cols, n)
    rows = (n + cols - 1) // cols
    size = max(2.5, 0.32 * max(len(tokens_q), len(tokens_k)) + 1)
    fig = new_figure((size * cols, size * rows))
    axes = fig.subplots(rows, cols, squeeze=False)
    labels_q = [repr(t)[1:-1] for t in tokens_q]
    labels_k = [repr(t)[1:-1] for t in tokens_k]
    for i, ax in enumerate(axes.flat):
        if i >= n:
            ax.axis("off")
            continue
        ax.imshow(w[i], cmap="viridis", vmin=0.0, vmax=1.0)
        ax.set_xticks(range(len(labels_k)), labels_k, rotation=90, fontsize=7)
        ax.set_yticks(range(len(labels_q)), labels_q, fontsize=7)
        if titles:
            ax.set_title(titles[i], fontsize=8)
        if len(labels_q) <= 12 and len(labels_k) <= 12:
            for r in range(w.shape[1]):
                for c in range(w.shape[2]):
                    ax.text(c, r, f"{w[i, r, c]:.2f}", ha="center", va="center", fontsize=6,
                            color="white" if w[i, r, c] < 0.5 else "black")
    return fig


def plot_attention(tokens_q: list[str], tokens_k: list[str], weights: np.ndarray | list, out: str | Path,
                   titles: list[str] | None = None, cols: int = 4) -> Path:
    """:func:`attention_figure` written to ``out``."""
    return save_figure(attention_figure(tokens_q, tokens_k, weights, titles, cols), out)


def embedding_map_figure(words: list[str], coords: np.ndarray, title: str | None = None):
    """A labelled scatter plot of 2-D word coordinates (words, 2); a Figure."""
    size = max(6.0, min(24.0, 0.45 * np.sqrt(len(words)) * 2))
    fig = new_figure((size, size))
    ax = fig.subplots()
    ax.scatter(coords[:, 0], coords[:, 1], s=6, alpha=0.6)
    for word, (x, y) in zip(words, coords):
        ax.annotate(word, (x, y), fontsize=7, alpha=0.85, xytext=(2, 2), textcoords="offset points")
    ax.set_xticks([])
    ax.set_yticks([])
    if title:
        ax.set_title(title)
    return fig
