"""Plots: loss curves, attention heatmaps (seed 002's "your cat is a lovely cat" matrix), embedding maps.

matplotlib runs with the non-interactive Agg backend; every figure is written atomically (temporary
file + rename), and an ``--out`` path's missing parent folders are created.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from seqlab.io import atomic_path, read_metrics


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path: str | Path) -> Path:
    try:
        with atomic_path(path) as tmp:  # same suffix: matplotlib picks the format from it
            fig.savefig(tmp, dpi=120, bbox_inches="tight")
    finally:
        pyplot().close(fig)
    return Path(path)


def plot_loss(metrics_path: str | Path, out: str | Path, chosen_step: int | None = None) -> Path | None:
    """Training and validation loss against the step, from a run's metrics.jsonl; ``chosen_step`` (the best
    checkpoint, what readers load) is marked on the validation curve."""
    rows = read_metrics(metrics_path)
    train = [(r["step"], r["loss"]) for r in rows if r.get("split") == "train"]
    valid = [(r["step"], r["loss"]) for r in rows if r.get("split") == "valid"]
    if not train and not valid:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
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


def plot_attention(tokens_q: list[str], tokens_k: list[str], weights: np.ndarray | list, out: str | Path,
                   titles: list[str] | None = None, cols: int = 4) -> Path:
    """One heatmap per (layer, head): queries down, keys across, rows summing to 1.

    ``weights`` is (maps, seq_q, seq_k); ``titles`` names each map (e.g. "layer 0 head 1").
    """
    w = np.asarray(weights, dtype=float)
    if w.ndim == 2:
        w = w[None]
    n = w.shape[0]
    cols = min(cols, n)
    rows = (n + cols - 1) // cols
    size = max(2.5, 0.32 * max(len(tokens_q), len(tokens_k)) + 1)
    plt = pyplot()
    fig, axes = plt.subplots(rows, cols, figsize=(size * cols, size * rows), squeeze=False)
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
    return save_figure(fig, out)
