"""The optimiser and the learning-rate schedule, the same for every model family.

AdamW (Loshchilov & Hutter 2019) with weight decay on weight matrices only, not on norms, biases and
embeddings (as nanoGPT and most Transformer recipes), or plain SGD (``train.optimizer = "sgd"``, Lample et al.
2016's), and one schedule function of the position alone
(docs/manual.md, "Config conventions": "the learning-rate schedule is a function of the step and the configured
length only"), whose shape the task chooses. :func:`fit_steps` chooses that length for a time budget, from a short probe's speed, so
the schedule ends when the budget does.

A probe measures a few seconds; a machine whose load changes afterwards trains at another speed, and a schedule
of steps then ends early (faster) or is cut by the budget before its decay (slower). ``train.schedule =
"wsd-time"`` (what ``seqlab demo`` trains with) gives the schedule a second clock: its position is the larger of
the step and the share of the time budget (``train.max_minutes``) spent, as steps (:func:`clock_position`), so
the decay starts at the same share of the budget whatever the speed, and the run ends with the budget or at
``max_steps``, whichever comes first. The warm-up stays in steps. Its steps depend on the machine's speed, so
such a run does not resume bit for bit; every other schedule still is a function of the step alone.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from seqlab.base.config import TrainConfig
from seqlab.base.io import read_metrics, remove

if TYPE_CHECKING:  # annotations only: the schedule (learning_rate) runs without torch, as word2vec and GloVe do
    import torch
    from torch import nn

PROBE_STEPS = 40  # steps of the speed probe
BUDGET_SHARE = 0.9  # of the budget for steps; the rest for validations and checkpoints (measured: 0.93 ran out)
# the probe's settings beside its length: no validation, checkpoint or progress bar, a metrics row every step
PROBE_OVERRIDES = ("train.eval_every=0", "train.save_every=0", "train.log_every=1", "train.keep_best=false",
                   "train.progress=false")


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """AdamW groups: decay for weight matrices; none for norms, biases and embeddings."""
    from torch import nn

    decay, no_decay = [], []
    seen = set()
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            if not p.requires_grad or id(p) in seen:
                continue
            seen.add(id(p))
            is_matrix_weight = p.dim() >= 2 and not isinstance(module, nn.Embedding) and "embed" not in name
            (decay if is_matrix_weight else no_decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def make_optimizer(model: nn.Module, cfg: TrainConfig, device: torch.device) -> torch.optim.Optimizer:
    """``train.optimizer``: AdamW (the default) or SGD, over :func:`param_groups` (decay on weight matrices only).

    SGD is the optimiser of Lample et al. 2016 (glample/tagger): w <- w - lr * g, with ``train.momentum`` = mu > 0
    the heavy ball v <- mu * v + g, w <- w - lr * v (torch.optim.SGD, no dampening); ``train.weight_decay`` adds
    its L2 term (decay * w) to g. Its momentum buffers are the optimiser state a checkpoint saves."""
    import torch

    groups = param_groups(model, cfg.weight_decay)
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(groups, lr=cfg.lr, momentum=cfg.momentum)
    try:  # the fused kernel is ~5% faster on CPU and GPU (notes/cpu-performance.md)
        return torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), fused=True)
    except (RuntimeError, TypeError):
        return torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2))


def learning_rate(step: float, cfg: TrainConfig, *, total: float | None = None, shape: str = "cosine",
                  position: float | None = None) -> float:
    """The learning rate at position ``step`` of ``total`` (default ``max_steps``), for every family:

    - ``cosine`` (models trained by gradient steps): linear warm-up to ``lr`` over ``warmup_steps``, then cosine
      decay to ``min_lr`` at ``total``; with ``train.schedule = "wsd"`` (warm-up, stable, decay) ``lr`` is held
      after the warm-up and falls linearly to ``min_lr`` over the last ``decay_fraction`` of the steps after it:
      a run cut short by a time budget has trained at the full rate, and the decay is a short final phase;
      ``"wsd-time"`` is the same shape at a clock's ``position`` (:func:`clock_position`);
    - ``linear`` (word2vec, as the C tool and gensim: alpha falls to min_alpha over the run):
      ``lr - (lr - min_lr) · step / total``, never below ``min_lr``;
    - ``constant`` (GloVe, whose AdaGrad scales each weight's step itself): ``lr``.

    ``position`` (steps, at least ``step``; default ``step``): where a clock ahead of the step puts the schedule;
    the warm-up still counts steps, and the rate is the lower of the warm-up's and the schedule's at ``position``.
    """
    total = cfg.max_steps if total is None else total
    if position is not None and position > step:  # the time clock is ahead: the warm-up's rate (at the step) caps
        return min(learning_rate(step, cfg, total=total, shape=shape),  # the schedule's (at the position)
                   learning_rate(position, cfg, total=total, shape=shape))
    if shape == "constant":
        return cfg.lr
    if shape == "linear":
        return max(cfg.min_lr, cfg.lr - (cfg.lr - cfg.min_lr) * step / total)
    if cfg.warmup_steps and step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    span = max(1, total - cfg.warmup_steps)
    if cfg.schedule in ("wsd", "wsd-time"):
        decay = max(1.0, cfg.decay_fraction * span)  # steps of the final linear decay
        progress = min(1.0, max(0.0, (step - (total - decay)) / decay))
        return cfg.lr - (cfg.lr - cfg.min_lr) * progress
    progress = min(1.0, (step - cfg.warmup_steps) / span)
    return cfg.min_lr + 0.5 * (1.0 + math.cos(math.pi * progress)) * (cfg.lr - cfg.min_lr)


def clock_position(step: int, total: float, spent: float, start: float = 0.0) -> float:
    """The position (in steps, of ``total``) of a ``"wsd-time"`` schedule: the larger of ``step`` and the time
    clock, which has covered the share ``spent`` (elapsed / ``train.max_minutes``) of the steps that remained at
    ``start`` (the position where this invocation began: 0, or where a resumed run stopped). A run at the speed
    its length was planned for keeps both clocks together; a slower one follows the time clock, so its decay
    starts at the same share of the budget and it ends, decayed, when the budget does (``spent`` = 1)."""
    return max(float(step), start + spent * (total - start))


def probe_rate(probe: Callable[[list[str], Path], object], out: Path, probe_steps: int = PROBE_STEPS) -> float:
    """This machine's steps per second for a run: ``probe(overrides, run_dir)`` trains it with ``overrides`` added
    (``probe_steps`` steps, :data:`PROBE_OVERRIDES`) into a scratch run directory beside ``out``, removed
    afterwards; the first quarter of the steps is left out as start-up."""
    out.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".demo-probe-", dir=out.parent))
    try:
        probe([f"train.max_steps={probe_steps}", *PROBE_OVERRIDES], scratch)
        rows = [r for r in read_metrics(scratch / "metrics.jsonl") if r.get("split") == "train"]
    finally:
        remove(scratch)
    elapsed = {r["step"]: r["tokens"] / r["tokens_per_s"] for r in rows}  # seconds since the first step began
    first, last = probe_steps // 4, max(elapsed)
    return (last - first) / (elapsed[last] - elapsed[first])


def budget_steps(steps_per_s: float, minutes: float) -> int:
    """The steps that fit in ``minutes`` at ``steps_per_s``, leaving :data:`BUDGET_SHARE` for validations and
    checkpoints, so the learning-rate schedule ends (decayed to min_lr) when the time budget does."""
    return max(100, int(steps_per_s * 60 * minutes * BUDGET_SHARE))


def fit_steps(probe: Callable[[list[str], Path], object], minutes: float, out: Path, log,
              probe_steps: int = PROBE_STEPS) -> int:
    """How many steps fit in ``minutes`` on this machine (:func:`probe_rate`, :func:`budget_steps`)."""
    rate = probe_rate(probe, out, probe_steps)
    steps = budget_steps(rate, minutes)
    log(f"demo: {rate:.1f} steps/s on this machine; a {steps:,}-step schedule fits {minutes:g} min")
    return steps
