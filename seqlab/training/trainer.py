"""The Trainer, shared by every model family.

One optimiser step (:meth:`Trainer.train_step`; notes: Recurrent neural networks › Language model loss): the
loss is the mean of -log p(y_t | x_<t) over the real tokens, accumulated over ``train.grad_accum`` micro-batches
and, under ``torchrun``, over processes, so the gradient is exactly that of the token-weighted mean over the
global batch. Then gradient clipping, AdamW (decay on weight matrices only) or SGD (``train.optimizer``), and a learning rate that is a
function of the step alone: linear warm-up to ``lr`` over ``warmup_steps``, cosine decay to ``min_lr`` at
``max_steps`` (:mod:`seqlab.training.optim`; devices, processes and precision: :mod:`seqlab.training.devices`); only
``train.schedule = "wsd-time"`` adds a time clock (:func:`seqlab.training.optim.clock_position`).

A task plugs in through :class:`TrainTask`. Word2vec and GloVe plug in through :class:`KernelTask`: their
numba kernels update the weights themselves (Hogwild SGD / AdaGrad, what makes them as fast as gensim and the
C tools), one slice of an epoch per step, at the learning rates this module's schedule gives them; everything
around the update is the same loop. The trainer owns the loop, precision (bf16/fp16 autocast),
``torch.compile``, DDP, periodic validation, progress, ``metrics.jsonl``, plots and checkpoints
(:mod:`seqlab.training.checkpoint`). Random streams: the data generator and torch's global RNG (dropout) are
saved with every checkpoint; validation draws from neither, so ``--resume`` continues bit-for-bit.
"""

from __future__ import annotations

import contextlib
import logging
import math
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from seqlab.training import checkpoint, rundir
from seqlab.training.callbacks import Callbacks
from seqlab.base.config import METRIC_HIGHER_IS_BETTER, TrainConfig
from seqlab.base.console import bars_shown, where_training_is
from seqlab.training.devices import Dist, StopSignals, autocast, resolve_device, resolve_precision
from seqlab.base.errors import SeqlabError, spelled
from seqlab.base.io import MetricsLog, versions
from seqlab.training.optim import clock_position, learning_rate, make_optimizer
from seqlab.training.report import report_sample, reporters

if TYPE_CHECKING:  # annotations only: a numba kernel task trains without torch; the rest imports it where it runs
    import torch
    from torch import nn

_logger = logging.getLogger("seqlab")


# The train.* keys the Trainer reads: what a task that trains through it uses (plus its own, e.g. label_smoothing).
TRAINER_KEYS = ("max_steps", "epochs", "max_minutes", "batch_size", "grad_accum", "lr", "min_lr", "warmup_steps",
                "schedule", "decay_fraction", "optimizer", "weight_decay", "beta1", "beta2", "momentum", "grad_clip",
                "seed", "precision", "compile", "device", "eval_every", "eval_batches", "save_every",
                "log_every", "keep_best", "keep_last", "patience", "best_by", "report_to", "progress")
# The train.* keys of a run through the Trainer: what it reads, and train.threads, which the entry point that runs it
# sets for the run (seqlab.api.train_run; the Trainer takes the thread counts as given).
RUN_KEYS = (*TRAINER_KEYS, "threads")


class TrainTask(Protocol):
    """What the trainer needs from a task (language modelling, tagging, classification, ...)."""

    model: nn.Module
    train_tokens: int  # size of one epoch, in the unit `count` returns

    def train_batch(self, generator: torch.Generator, n: int) -> Any:
        """Draw the next ``n`` training examples (the whole global micro-batch) from ``generator`` only."""

    def shard(self, batch: Any, rank: int, world: int) -> Any:
        """This process's share of a global micro-batch."""

    def count(self, batch: Any) -> int:
        """Number of loss terms (real tokens) in a batch."""

    def loss_sum(self, model: nn.Module, batch: Any, device: torch.device) -> torch.Tensor:
        """Sum of the per-token losses over the batch's real tokens."""

    def validate(self, model: nn.Module, device: torch.device, max_batches: int | None) -> dict[str, float]:
        """Validation metrics (must include ``loss``); deterministic, draws from no training stream."""


class KernelTask(Protocol):
    """A task whose weights are updated by its own kernel, one slice of an epoch per step (word2vec, GloVe)."""

    model: nn.Module
    steps_per_epoch: int
    schedule: str  # the learning-rate shape, see learning_rate: "linear" (word2vec) | "constant" (GloVe)
    unit: str  # what the progress rate counts ("word")

    def update(self, epoch: int, index: int, lr: Callable[[float], float]) -> Any:
        """Step ``index`` of ``epoch``; ``lr(epochs done, a float)`` is the schedule's rate at that position.
        Returns stats with ``loss`` (a sum), ``terms`` (its count), ``words`` and ``raw_words``."""

    def trainer_tensors(self) -> dict[str, torch.Tensor]:
        """What besides the weights a resume needs (optimiser accumulators, random streams)."""

    def restore_trainer_tensors(self, tensors: dict[str, torch.Tensor]) -> None:
        """Put back what :meth:`trainer_tensors` saved."""


def shard_rows(batch, rank: int, world: int):
    """This process's contiguous share of a global batch: every tensor of a tuple (or NamedTuple) cut along
    dim 0 into ``world`` equal parts. The default ``TrainTask.shard`` of every task."""
    if world == 1:
        return batch
    n = batch[0].shape[0] // world
    parts = [t[rank * n:(rank + 1) * n] for t in batch]
    return type(batch)(*parts) if hasattr(batch, "_fields") else tuple(parts)


# ------------------------------------------------------------------------------------------------------
# the loop


class Trainer:
    """Runs a :class:`TrainTask` (or a :class:`KernelTask`) under a :class:`TrainConfig`, writing into ``run_dir``
    (rank 0 only)."""

    def __init__(self, task: TrainTask | KernelTask, cfg: TrainConfig, run_dir: str | Path, *,
                 dist: Dist | None = None, device: torch.device | None = None, extra_state: dict | None = None,
                 log: Callable[..., Any] | None = None, callbacks: Iterable[Any] | None = None):
        self.task, self.cfg, self.run_dir = task, cfg, Path(run_dir)
        self.dist = dist or Dist()
        self.kernel = hasattr(task, "update") and hasattr(task, "steps_per_epoch")  # a KernelTask
        self.extra_state = extra_state or {}
        log = log or (lambda *a, **k: _logger.info(" ".join(map(str, a))))
        self.log = log if self.dist.main else (lambda *a, **k: None)
        self.callbacks = Callbacks(callbacks, self.dist)
        # thread counts are the entry point's (seqlab.api.train_run sets train.threads for the run; a notebook that
        # builds a Trainer keeps its own): the Trainer takes them as given
        self.step = 0
        self.examples_seen = 0
        self.tokens_seen = 0
        self.higher = METRIC_HIGHER_IS_BETTER[cfg.best_by]  # the direction of train.best_by
        self.best = -math.inf if self.higher else math.inf  # the best validation value so far, at best_step
        self.best_loss: float | None = None  # the validation loss at best_step
        self.best_step: int | None = None
        self.evals_since_best = 0  # validations without a new best (for train.patience)
        self.grad_norm: torch.Tensor | None = None  # the last step's gradient norm (train.grad_clip > 0)
        self.stopped_early = False
        self.committed = False  # whether this Trainer has committed a checkpoint of the run
        # a tqdm bar on a terminal or in a notebook (train.progress); elsewhere one line per evaluation in the log
        self.bar = self.dist.main and cfg.progress and bars_shown()
        self.last_train = ""  # the latest step's loss and rate, for the evaluation line when there is no bar
        self.started = time.perf_counter()
        # train.schedule = "wsd-time" (a task's kernel schedule never is): the schedule's position, the larger of
        # the step and the time clock, and where the clock started in this invocation
        self.clocked = cfg.schedule == "wsd-time" and not self.kernel
        self.position = self.clock_start = 0.0
        if self.clocked and self.dist.world > 1:
            raise SeqlabError("train.schedule=wsd-time runs in one process (each process would read its own "
                              "clock); under torchrun use train.schedule=wsd")
        if self.kernel:  # the task's kernel owns the weights' device and their update
            if self.dist.world > 1:
                raise SeqlabError("word2vec and GloVe train in one process with Hogwild threads; run without "
                                  "torchrun and set train.threads instead")
            self.model = self.train_model = task.model
            self.total_steps = int(cfg.epochs) * task.steps_per_epoch
            self.epoch_totals = _zero_totals()
            return
        import torch

        self.device = device or resolve_device(cfg.device, self.dist.local_rank)
        self.precision = resolve_precision(cfg.precision, self.device, warn=self.log)
        if cfg.batch_size % (cfg.grad_accum * self.dist.world):
            raise SeqlabError(f"train.batch_size ({cfg.batch_size}) must be divisible by train.grad_accum x processes "
                              f"({cfg.grad_accum} x {self.dist.world})")
        torch.manual_seed(cfg.seed + self.dist.rank)  # dropout streams: one per process
        self.generator = torch.Generator().manual_seed(cfg.seed)  # data stream: identical on every process
        self.model = task.model.to(self.device)
        self.optimizer = make_optimizer(self.model, cfg, self.device)
        self.scaler = torch.amp.GradScaler("cuda") if self.precision == "fp16" else None
        self.total_steps = cfg.max_steps
        self.train_model = self.model  # wrapped for DDP and torch.compile
        if self.dist.world > 1:
            from torch.nn.parallel import DistributedDataParallel as DDP

            self.train_model = DDP(self.model, device_ids=[self.device.index] if self.device.type == "cuda" else None)
        if cfg.compile:
            self.train_model = torch.compile(self.train_model)

    # --- checkpoints ---

    def state(self) -> dict[str, Any]:
        state = {"step": self.step, "examples_seen": self.examples_seen, "tokens_seen": self.tokens_seen,
                 "best_by": self.cfg.best_by, "best_value": None if math.isinf(self.best) else self.best,
                 "best_valid_loss": self.best_loss, "best_step": self.best_step,
                 "evals_since_best": self.evals_since_best, "stopped_early": self.stopped_early,
                 "versions": versions("torch"), **self.extra_state}
        if self.kernel:
            state.update(steps_per_epoch=self.task.steps_per_epoch, epoch_totals=dict(self.epoch_totals))
        elif self.clocked:
            state["schedule_position"] = self.position
        return state

    def save(self, directory: Path | None = None) -> None:
        """Commit a checkpoint: the run's (keeping ``train.keep_last`` of them), or ``directory``'s (best/)."""
        if not self.dist.main:
            return
        if self.kernel:
            trainer_tensors = self.task.trainer_tensors()
        else:
            trainer_tensors = {**checkpoint.optimizer_tensors(self.optimizer), **checkpoint.rng_tensors(self.generator)}
        checkpoint.save(directory or self.run_dir, self.model, trainer_tensors, self.state(),
                        keep_last=1 if directory else self.cfg.keep_last)
        self.callbacks.call("on_checkpoint", {"step": self.step, "dir": str(directory or self.run_dir),
                                     "best": directory is not None})
        if directory is None and not self.committed:
            rundir.committed(self.run_dir)  # the run has its first checkpoint: it is no longer a start to undo
            self.committed = True

    def restore(self) -> bool:
        """Load the newest intact checkpoint of the run directory (falling back past damaged ones, which it
        reports); False when there is none (start from step 0)."""
        found, damaged = checkpoint.restore_latest(self.run_dir, self._restore_from)
        if damaged:
            where = found.relative_to(self.run_dir)
            self.log(f"warning: {damaged[0]}; resumed from the newest intact checkpoint, {where} (step {self.step}); "
                     f"damaged checkpoints are set aside in {self.run_dir / checkpoint.ARCHIVE}")
        return found is not None

    def _restore_from(self, directory: Path) -> None:
        state = checkpoint.load_state(directory)
        checkpoint.load_model(self.model, directory / "model.safetensors")
        self.step = state["step"]
        if self.kernel:  # its state is numpy arrays (read without torch)
            self.task.restore_trainer_tensors(checkpoint.load_arrays(directory / "trainer.safetensors"))
            self.step = self._kernel_step_of(state)
            self.epoch_totals = {**_zero_totals(), **state.get("epoch_totals", {})}
        else:
            import torch

            tensors = checkpoint.load_tensors(directory / "trainer.safetensors")
            checkpoint.restore_optimizer(self.optimizer, tensors)
            checkpoint.restore_rng(self.generator, tensors)
            if self.clocked:
                self.position = max(float(self.step), state.get("schedule_position", 0.0))
            if self.dist.rank:  # restore_rng set rank 0's dropout stream; give each process its own again
                torch.manual_seed(self.cfg.seed + self.dist.rank + 7919 * state["step"])
        self.examples_seen = state.get("examples_seen", 0)
        self.tokens_seen = state.get("tokens_seen", 0)
        self.best_loss = state.get("best_valid_loss")
        best = state.get("best_value", self.best_loss)  # a run from before train.best_by: chosen by the loss
        if state.get("best_by", "loss") == self.cfg.best_by and best is not None:
            self.best = best
            self.best_step = state.get("best_step")
            self.evals_since_best = state.get("evals_since_best", 0)
        self.stopped_early = state.get("stopped_early", False)

    def _kernel_step_of(self, state: dict) -> int:
        """The step to continue from in this run's step geometry. Runs saved before steps existed counted
        epochs (``step`` = epochs done); an epoch boundary carries over to any geometry."""
        per_epoch = self.task.steps_per_epoch
        saved_per_epoch = state.get("steps_per_epoch", 1)
        epochs, index = divmod(state["step"], saved_per_epoch)
        if index and saved_per_epoch != per_epoch:
            raise SeqlabError(f"cannot resume {self.run_dir} mid-epoch: it was saved with {saved_per_epoch} steps "
                              f"per epoch and this version takes {per_epoch}; start a new run with {spelled('force')}")
        return epochs * per_epoch + index

    # --- one step ---

    def _global_count(self, n: int) -> int:
        return n if self.dist.world == 1 else int(self._reduce_sum(n))

    def _reduce_sum(self, value: torch.Tensor | int) -> float:
        if self.dist.world > 1:
            import torch
            import torch.distributed as dist

            value = torch.as_tensor(value, device=self.device).detach().to(torch.float64)
            dist.all_reduce(value)
        return float(value)

    def train_step(self) -> tuple[float, int]:
        r"""One optimiser step; returns (token-weighted mean loss over the global batch, tokens in it).

        !!! equation "Recurrent neural networks › Language model loss"
            $L = \frac{1}{N} \sum_{n=1}^{N} \ell_n$: the loss of one step, the task's summed loss over the global
            batch divided by its count $N$: for a language model the $N$ real target tokens, $\ell_t = -\log
            p(y_t \mid x_{\le t})$ with $y_t = x_{t+1}$ (the notes' average token-level NLL,
            ``LMTask.loss_sum``); for the other tasks their own loss per target word,
            sentence or value (a forecaster's squared error).

        !!! equation "Recurrent neural networks › Vanishing and exploding gradients (beyond the notes)"
            $g \leftarrow g \min(1, c / \Vert g \Vert)$: gradient clipping (``train.grad_clip`` $= c$, over all
            the weights' gradients together) against explosion; 0 turns it off.
            default: train.grad_clip = 1.0; presets: ner-bilstm = 5.0, ner-bilstm-crf = 5.0, ner-lample = 5.0,
            sentiment-lstm = 5.0"""
        import torch

        cfg, task = self.cfg, self.task
        micro = cfg.batch_size // cfg.grad_accum
        batches = [task.shard(task.train_batch(self.generator, micro), self.dist.rank, self.dist.world)
                   for _ in range(cfg.grad_accum)]
        local = sum(task.count(b) for b in batches)
        total = self._global_count(local)
        self.lr = learning_rate(self.step, cfg, position=self.position if self.clocked else None)
        for group in self.optimizer.param_groups:
            group["lr"] = self.lr
        loss_total = torch.zeros((), dtype=torch.float64, device=self.device)
        for i, batch in enumerate(batches):
            last = i == len(batches) - 1
            sync = contextlib.nullcontext() if last or self.dist.world == 1 else self.train_model.no_sync()
            with sync:
                with autocast(self.precision, self.device):
                    loss_sum = task.loss_sum(self.train_model, batch, self.device)
                # DDP averages gradients over processes: scale by world so the result is sum / total.
                scaled = loss_sum.float() * (self.dist.world / max(total, 1))
                (self.scaler.scale(scaled) if self.scaler else scaled).backward()
            loss_total += loss_sum.detach().double()
        if self.scaler:
            self.scaler.unscale_(self.optimizer)
        if cfg.grad_clip:  # the norm before clipping (a tensor: read only where a row is written)
            self.grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.grad_clip)
        if self.scaler:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        self.examples_seen += cfg.batch_size
        self.tokens_seen += total
        return self._reduce_sum(loss_total) / max(total, 1), total

    def kernel_lr(self, epochs_done: float) -> float:
        """A kernel task's learning rate after ``epochs_done`` epochs (a float) of ``train.epochs``."""
        return learning_rate(epochs_done, self.cfg, total=self.cfg.epochs, shape=self.task.schedule)

    def kernel_step(self) -> tuple[float, int]:
        """One step of a kernel task; returns (mean loss over its terms, effective words)."""
        epoch, index = divmod(self.step, self.task.steps_per_epoch)
        t0 = time.perf_counter()
        stats = self.task.update(epoch, index, self.kernel_lr)
        totals = self.epoch_totals
        totals["seconds"] += time.perf_counter() - t0
        for key in ("loss", "terms", "words", "raw_words"):
            totals[key] += getattr(stats, key)
        self.step += 1
        self.tokens_seen += stats.words
        return stats.loss / max(stats.terms, 1), stats.words

    def _end_epoch(self, metrics: MetricsLog, progress) -> None:
        """After a kernel task's last step of an epoch: its row in metrics.jsonl, a line, a checkpoint."""
        epoch, t, unit = self.step // self.task.steps_per_epoch, self.epoch_totals, self.task.unit
        seconds = max(t["seconds"], 1e-9)
        loss, rate, raw_rate = t["loss"] / max(t["terms"], 1), t["words"] / seconds, t["raw_words"] / seconds
        metrics.write({"step": self.step, "epoch": epoch, "split": "train", "loss": loss, "lr": self.kernel_lr(epoch),
                       f"{unit}s_per_s": rate, f"raw_{unit}s_per_s": raw_rate, f"effective_{unit}s": t["words"],
                       f"raw_{unit}s": t["raw_words"], "terms": t["terms"], "seconds": t["seconds"]})
        line = (f"epoch {epoch}/{int(self.cfg.epochs)}: loss {loss:.4f}, {rate:,.0f} effective {unit}s/s "
                f"({raw_rate:,.0f} raw)")
        self._show(progress, line)
        self.epoch_totals = _zero_totals()
        self.save()

    # --- validation ---

    def validate(self, max_batches: int | None) -> dict[str, float]:
        import torch

        self.model.eval()
        try:
            with torch.no_grad(), autocast(self.precision, self.device):
                return self.task.validate(self.model, self.device, max_batches)
        finally:
            self.model.train()

    # --- the loop ---

    def done(self) -> bool:
        """The configured length is reached (``max_steps``, a kernel task's epochs, ``epochs`` of tokens; the
        time clock's position, with ``"wsd-time"``), or ``train.patience`` stopped the run early."""
        if self.stopped_early or self.step >= self.total_steps:
            return True
        if self.clocked and self.position >= self.total_steps:
            return True
        return (not self.kernel and bool(self.cfg.epochs)
                and self.tokens_seen >= self.cfg.epochs * self.task.train_tokens)

    def advance_clock(self) -> None:
        """``"wsd-time"``: the schedule's position now (:func:`seqlab.training.optim.clock_position`), the time clock
        counting this invocation's ``train.max_minutes`` from where it began."""
        if self.clocked:
            spent = (time.perf_counter() - self.started) / (60 * self.cfg.max_minutes)
            self.position = clock_position(self.step, self.total_steps, spent, self.clock_start)

    def over_budget(self) -> bool:
        """``train.max_minutes`` of this invocation are spent (checked after each step, so every invocation
        makes progress)."""
        return bool(self.cfg.max_minutes) and time.perf_counter() - self.started > 60 * self.cfg.max_minutes

    def run(self, resume: bool) -> dict[str, Any]:
        """Restore the run directory's checkpoint when ``resume`` (and one exists), then train to the end;
        returns the final state. What every task's ``train`` ends with."""
        if resume and self.restore():
            self.log(f"resumed from step {self.step}")
        if self.done():
            self.log(f"already trained to step {self.step}; nothing to do")
            return {**self.state(), "interrupted": False}
        return self.fit()

    def fit(self) -> dict[str, Any]:
        """Train until the end (max_steps, epochs or the time budget); returns the final state. SIGINT saves
        and SIGTERM save and stop cleanly at the next step boundary."""
        sinks = reporters(self.cfg.report_to, self.run_dir, self.step) if self.dist.main else []
        with MetricsLog(self.run_dir / "metrics.jsonl", enabled=self.dist.main, sinks=sinks) as metrics:
            metrics.truncate_after(self.step)
            return self._fit(metrics)

    def _fit(self, metrics: MetricsLog) -> dict[str, Any]:
        cfg, kernel = self.cfg, self.kernel
        self.model.train()
        length = None if self.cfg.max_minutes else self.total_steps  # the time budget may end it before max_steps
        progress = _progress(length, self.step, enabled=self.bar)
        unit = self.task.unit if kernel else "tok"
        take_step = self.kernel_step if kernel else self.train_step
        validates = hasattr(self.task, "validate")
        last_saved = self.step
        t0, tok0 = time.perf_counter(), 0
        self.started = t0  # the time budget counts from here
        if self.clocked:
            self.clock_start = self.position = max(self.position, float(self.step))
        interrupted = False
        with StopSignals() as interrupt:
            while not self.done():
                loss, tokens = take_step()
                self.advance_clock()
                if not math.isfinite(loss):
                    progress.close()
                    hint = "lower train.lr" if kernel else "lower train.lr or raise train.warmup_steps"
                    raise SeqlabError(f"non-finite loss ({loss}) at step {self.step}; stopped, the last good "
                                      f"checkpoint (step {last_saved}) is kept; {hint}, then {spelled('resume')}")
                tok0 += tokens
                elapsed = time.perf_counter() - t0
                rate = tok0 / elapsed if elapsed > 0 else 0.0
                progress.update(1)
                self.last_train = f"loss {loss:.4f}  {rate:,.0f} {unit}/s"
                progress.set_postfix_str(self.last_train)
                if kernel:
                    row = {"step": self.step, "split": "train", "loss": loss, f"{unit}s_per_s": rate}
                    if self.step % self.task.steps_per_epoch == 0:
                        self._end_epoch(metrics, progress)
                        last_saved = self.step
                else:
                    row = {"step": self.step, "split": "train", "loss": loss,
                           "lr": self.lr, "tokens_per_s": rate, "tokens": self.tokens_seen}
                    if cfg.log_every and self.step % cfg.log_every == 0 or self.step == 1:
                        if self.grad_norm is not None:
                            row["grad_norm"] = float(self.grad_norm)
                        metrics.write(row)
                self.callbacks.call("on_step", row)
                if self.over_budget():
                    break
                if validates and cfg.eval_every and self.step % cfg.eval_every == 0 and not self.done():
                    self._evaluate(metrics, progress)
                if cfg.save_every and self.step % cfg.save_every == 0 and not self.done() and last_saved != self.step:
                    self.save()
                    last_saved = self.step
                if interrupt.flag:
                    interrupted = True
                    break
                if self.callbacks.stop_agreed(None if kernel else self.device):
                    self.log(f"stopped at step {self.step} by a callback; continue with resume")
                    break
        if validates and not interrupted and metrics.last_step("valid") != self.step:
            self._evaluate(metrics, progress)
        if last_saved != self.step or not checkpoint.exists(self.run_dir):
            self.save()
        progress.close()
        return {**self.state(), "interrupted": interrupted, "signal": interrupt.signum,
                "stopped_by_callback": self.callbacks.stop_requested}

    def _show(self, progress, line: str) -> None:
        """A summary line: above the bar where one is drawn, else in the log (the ``seqlab`` logger from Python,
        stderr from the command line), with ``train.progress`` off too."""
        if self.bar:
            progress.write(line, file=sys.stderr)
        else:
            self.log(line)

    def _evaluate(self, metrics: MetricsLog, progress) -> None:
        result = self.validate(self.cfg.eval_batches or None)  # 0: the whole valid split
        metrics.write({"step": self.step, "split": "valid", **result, "validated": self.cfg.validated})
        report_sample(metrics.sinks, self.task, self.model, self.device, self.step)
        self.callbacks.call("on_eval", {"step": self.step, "split": "valid", **result})
        line = "valid " + "  ".join(f"{k} {v:.4f}" for k, v in result.items() if isinstance(v, float))
        if self.bar or not self.last_train:
            self._show(progress, f"step {self.step}: {line}")
        else:  # the line stands for the bar: where training is, and how fast
            where = where_training_is(self.step, self.total_steps, self.cfg.max_minutes, self.started)
            self._show(progress, f"{where}: {line}; train {self.last_train}")
        metric = self.cfg.best_by  # one the task reports (tasks.registry checks it): absent only with no
        value = result.get(metric, math.nan)  # validation data, like a NaN loss never a new best
        if value > self.best if self.higher else value < self.best:  # NaN is never a new best
            self.best, self.best_loss, self.best_step, self.evals_since_best = value, result["loss"], self.step, 0
            if self.cfg.keep_best:
                self.save(self.run_dir / "best")
        else:
            self.evals_since_best += 1
        if self.cfg.patience and self.evals_since_best >= self.cfg.patience and not self.done():
            self.stopped_early = True
            self.log(f"early stop at step {self.step}: no new best validation {metric} in {self.cfg.patience} "
                     f"validations (best {self.best:.4f} at step {self.best_step})")


def _zero_totals() -> dict[str, float]:
    return {"loss": 0.0, "terms": 0, "words": 0, "raw_words": 0, "seconds": 0.0}


def _progress(total: int, start: int, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=start, disable=not enabled, unit="step", dynamic_ncols=True,
                file=sys.stderr, desc="train")
