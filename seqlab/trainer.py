"""The Trainer, shared by every model family trained by gradient steps.

One optimiser step (seed 003: the loss is the average token-level negative log-likelihood):

    L = (sum over real tokens t of the batch of -log p(y_t | x_<t)) / (number of real tokens)

accumulated over ``train.grad_accum`` micro-batches and, under ``torchrun``, over processes, so the
gradient is exactly that of the token-weighted mean over the global batch. Then gradient clipping,
AdamW (decay on weight matrices only), and a learning rate that is a function of the step alone:
linear warm-up to ``lr`` over ``warmup_steps``, cosine decay to ``min_lr`` at ``max_steps``.

A task plugs in through :class:`TrainTask`. The trainer owns the loop, precision (bf16/fp16 autocast),
``torch.compile``, DDP, periodic validation, progress, ``metrics.jsonl``, plots and checkpoints
(:mod:`seqlab.checkpoint`). Random streams: the data generator and torch's global RNG (dropout) are
saved with every checkpoint; validation draws from neither, so ``--resume`` continues bit-for-bit.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import torch
from torch import nn

from seqlab import checkpoint
from seqlab.config import TrainConfig
from seqlab.errors import SeqlabError
from seqlab.io import versions, write_text_atomic


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


def shard_rows(batch, rank: int, world: int):
    """This process's contiguous share of a global batch: every tensor of a tuple (or NamedTuple) cut along
    dim 0 into ``world`` equal parts. The default ``TrainTask.shard`` of every task."""
    if world == 1:
        return batch
    n = batch[0].shape[0] // world
    parts = [t[rank * n:(rank + 1) * n] for t in batch]
    return type(batch)(*parts) if hasattr(batch, "_fields") else tuple(parts)


# ------------------------------------------------------------------------------------------------------
# devices, precision, processes


@dataclass(frozen=True)
class Dist:
    rank: int = 0
    world: int = 1
    local_rank: int = 0

    @property
    def main(self) -> bool:
        return self.rank == 0


def init_distributed(device_kind: str) -> Dist:
    """Join the process group when launched by ``torchrun`` (gloo on CPU, NCCL on CUDA)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world == 1:
        return Dist()
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if device_kind == "cuda" else "gloo")
    return Dist(rank=dist.get_rank(), world=dist.get_world_size(), local_rank=int(os.environ.get("LOCAL_RANK", 0)))


def resolve_device(name: str, local_rank: int = 0) -> torch.device:
    if name == "cuda" and not torch.cuda.is_available():
        raise SeqlabError("train.device=cuda but no CUDA device is available; use --set train.device=cpu")
    if name == "cuda" or (name == "auto" and torch.cuda.is_available()):
        return torch.device("cuda", local_rank)
    return torch.device("cpu")


def cpu_has_fast_bf16() -> bool:
    """AMX or AVX-512 bf16 instructions: bf16 autocast then doubles training speed (notes/cpu-performance.md)."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "amx_bf16" in flags or "avx512_bf16" in flags


def resolve_precision(name: str, device: torch.device) -> str:
    if name == "fp16" and device.type != "cuda":
        raise SeqlabError("train.precision=fp16 needs CUDA; on CPU use bf16 or fp32")
    if name != "auto":
        return name
    if device.type == "cuda":
        return "bf16" if torch.cuda.is_bf16_supported() else "fp32"
    return "bf16" if cpu_has_fast_bf16() else "fp32"


def autocast(precision: str, device: torch.device):
    if precision == "fp32":
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return torch.autocast(device_type=device.type, dtype=dtype)


# ------------------------------------------------------------------------------------------------------
# optimiser and schedule


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """AdamW groups: decay for weight matrices; none for norms, biases and embeddings."""
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
    groups = param_groups(model, cfg.weight_decay)
    try:  # the fused kernel is ~5% faster on CPU and GPU (notes/cpu-performance.md)
        return torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), fused=True)
    except (RuntimeError, TypeError):
        return torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2))


def learning_rate(step: int, cfg: TrainConfig) -> float:
    """Linear warm-up to ``lr`` over ``warmup_steps``, then cosine decay to ``min_lr`` at ``max_steps``."""
    if cfg.warmup_steps and step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    span = max(1, cfg.max_steps - cfg.warmup_steps)
    progress = min(1.0, (step - cfg.warmup_steps) / span)
    return cfg.min_lr + 0.5 * (1.0 + math.cos(math.pi * progress)) * (cfg.lr - cfg.min_lr)


# ------------------------------------------------------------------------------------------------------
# the loop


class SigintFlag:
    """Turns SIGINT into a flag checked between steps, so the step in flight finishes and is saved."""

    def __init__(self):
        self.flag = False
        self._old = None

    def __enter__(self):
        if _is_main_thread():
            self._old = signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, signum, frame):
        if self.flag:  # a second Ctrl-C: stop at once
            raise KeyboardInterrupt
        self.flag = True

    def __exit__(self, *exc):
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)


def _is_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


class Trainer:
    """Runs a :class:`TrainTask` under a :class:`TrainConfig`, writing into ``run_dir`` (rank 0 only)."""

    def __init__(self, task: TrainTask, cfg: TrainConfig, run_dir: str | Path, *, dist: Dist | None = None,
                 device: torch.device | None = None, extra_state: dict | None = None, log=print):
        self.task, self.cfg, self.run_dir = task, cfg, Path(run_dir)
        self.dist = dist or Dist()
        self.device = device or resolve_device(cfg.device, self.dist.local_rank)
        self.precision = resolve_precision(cfg.precision, self.device)
        self.extra_state = extra_state or {}
        self.log = log if self.dist.main else (lambda *a, **k: None)
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        if cfg.batch_size % (cfg.grad_accum * self.dist.world):
            raise SeqlabError(f"train.batch_size ({cfg.batch_size}) must be divisible by train.grad_accum x processes "
                              f"({cfg.grad_accum} x {self.dist.world})")
        torch.manual_seed(cfg.seed + self.dist.rank)  # dropout streams: one per process
        self.generator = torch.Generator().manual_seed(cfg.seed)  # data stream: identical on every process
        self.model = task.model.to(self.device)
        self.optimizer = make_optimizer(self.model, cfg, self.device)
        self.scaler = torch.amp.GradScaler("cuda") if self.precision == "fp16" else None
        self.step = 0
        self.examples_seen = 0
        self.tokens_seen = 0
        self.best = math.inf
        self.started = time.perf_counter()
        self.train_model = self._wrap(self.model)

    def _wrap(self, model: nn.Module) -> nn.Module:
        if self.dist.world > 1:
            from torch.nn.parallel import DistributedDataParallel as DDP

            model = DDP(model, device_ids=[self.device.index] if self.device.type == "cuda" else None)
        if self.cfg.compile:
            model = torch.compile(model)
        return model

    # --- checkpoints ---

    def state(self) -> dict[str, Any]:
        return {"step": self.step, "examples_seen": self.examples_seen, "tokens_seen": self.tokens_seen,
                "best_valid_loss": None if math.isinf(self.best) else self.best,
                "versions": versions("torch"), **self.extra_state}

    def save(self, directory: Path | None = None) -> None:
        if not self.dist.main:
            return
        trainer_tensors = {**checkpoint.optimizer_tensors(self.optimizer), **checkpoint.rng_tensors(self.generator)}
        checkpoint.save(directory or self.run_dir, self.model, trainer_tensors, self.state())

    def restore(self) -> bool:
        """Load the last checkpoint in the run directory; False when there is none (start from step 0)."""
        if not checkpoint.exists(self.run_dir):
            return False
        state = checkpoint.load_state(self.run_dir)
        checkpoint.load_model(self.model, self.run_dir / "model.safetensors")
        tensors = checkpoint.load_tensors(self.run_dir / "trainer.safetensors")
        checkpoint.restore_optimizer(self.optimizer, tensors)
        checkpoint.restore_rng(self.generator, tensors)
        if self.dist.rank:  # restore_rng set rank 0's dropout stream; give each process its own again
            torch.manual_seed(self.cfg.seed + self.dist.rank + 7919 * state["step"])
        self.step = state["step"]
        self.examples_seen = state.get("examples_seen", 0)
        self.tokens_seen = state.get("tokens_seen", 0)
        best = state.get("best_valid_loss")
        self.best = math.inf if best is None else best
        return True

    # --- one optimiser step ---

    def _global_count(self, n: int) -> int:
        if self.dist.world == 1:
            return n
        import torch.distributed as dist

        t = torch.tensor([n], dtype=torch.float64, device=self.device)
        dist.all_reduce(t)
        return int(t.item())

    def _reduce_sum(self, value: torch.Tensor) -> float:
        if self.dist.world > 1:
            import torch.distributed as dist

            value = value.detach().to(torch.float64)
            dist.all_reduce(value)
        return float(value)

    def train_step(self) -> tuple[float, int]:
        """One optimiser step; returns (token-weighted mean loss over the global batch, tokens in it)."""
        cfg, task = self.cfg, self.task
        micro = cfg.batch_size // cfg.grad_accum
        batches = [task.shard(task.train_batch(self.generator, micro), self.dist.rank, self.dist.world)
                   for _ in range(cfg.grad_accum)]
        local = sum(task.count(b) for b in batches)
        total = self._global_count(local)
        for group in self.optimizer.param_groups:
            group["lr"] = learning_rate(self.step, cfg)
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
        if cfg.grad_clip:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.grad_clip)
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

    # --- validation ---

    @torch.no_grad()
    def validate(self, max_batches: int | None) -> dict[str, float]:
        self.model.eval()
        try:
            with autocast(self.precision, self.device):
                return self.task.validate(self.model, self.device, max_batches)
        finally:
            self.model.train()

    # --- the loop ---

    def done(self) -> bool:
        if self.step >= self.cfg.max_steps:
            return True
        if self.cfg.max_minutes and time.perf_counter() - self.started > 60 * self.cfg.max_minutes:
            return True
        return bool(self.cfg.epochs) and self.tokens_seen >= self.cfg.epochs * self.task.train_tokens

    def run(self, resume: bool) -> dict[str, Any]:
        """Restore the run directory's checkpoint when ``resume`` (and one exists), then train to the end;
        returns the final state. What every task's ``train`` ends with."""
        if resume and self.restore():
            self.log(f"resumed from step {self.step}")
        if self.done():
            self.log(f"already trained to step {self.step}; nothing to do")
            return self.state()
        return self.fit()

    def fit(self) -> dict[str, Any]:
        """Train until max_steps or epochs; returns the final state. SIGINT saves and stops cleanly."""
        cfg = self.cfg
        metrics = MetricsLog(self.run_dir / "metrics.jsonl", enabled=self.dist.main)
        metrics.truncate_after(self.step)
        self.model.train()
        progress = _progress(cfg, self.step, enabled=self.dist.main and cfg.progress)
        last_saved = self.step
        t0, tok0 = time.perf_counter(), 0
        interrupted = False
        with SigintFlag() as interrupt:
            while not self.done():
                loss, tokens = self.train_step()
                if not math.isfinite(loss):
                    progress.close()
                    raise SeqlabError(f"non-finite loss ({loss}) at step {self.step}; stopped, the last good "
                                      f"checkpoint (step {last_saved}) is kept; lower train.lr or raise "
                                      "train.warmup_steps, then --resume")
                tok0 += tokens
                elapsed = time.perf_counter() - t0
                rate = tok0 / elapsed if elapsed > 0 else 0.0
                progress.update(1)
                progress.set_postfix_str(f"loss {loss:.4f}  {rate:,.0f} tok/s")
                if cfg.log_every and self.step % cfg.log_every == 0 or self.step == 1:
                    metrics.write({"step": self.step, "split": "train", "loss": loss,
                                   "lr": learning_rate(self.step - 1, cfg), "tokens_per_s": rate,
                                   "tokens": self.tokens_seen})
                if cfg.eval_every and self.step % cfg.eval_every == 0 and not self.done():
                    self._evaluate(metrics, progress)
                if cfg.save_every and self.step % cfg.save_every == 0 and not self.done():
                    self.save()
                    last_saved = self.step
                if interrupt.flag:
                    interrupted = True
                    break
        if not interrupted:
            self._evaluate(metrics, progress)
        self.save()
        progress.close()
        return {**self.state(), "interrupted": interrupted}

    def _evaluate(self, metrics: "MetricsLog", progress) -> None:
        result = self.validate(self.cfg.eval_batches)
        metrics.write({"step": self.step, "split": "valid", **result})
        if self.dist.main:
            progress.write(f"step {self.step}: valid " + "  ".join(f"{k} {v:.4f}" for k, v in result.items()
                                                                   if isinstance(v, float)), file=sys.stderr)
        if result["loss"] < self.best:
            self.best = result["loss"]
            if self.cfg.keep_best:
                self.save(self.run_dir / "best")


def _progress(cfg: TrainConfig, start: int, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=cfg.max_steps, initial=start, disable=not enabled, unit="step", dynamic_ncols=True,
                file=sys.stderr, desc="train")


class MetricsLog:
    """``metrics.jsonl``: one JSON object per line (training rows and validation rows)."""

    def __init__(self, path: Path, enabled: bool = True):
        self.path, self.enabled = path, enabled

    def truncate_after(self, step: int) -> None:
        """On resume, drop rows written after the checkpoint we resume from (they will be redone)."""
        if not self.enabled or not self.path.exists():
            return
        rows = [line for line in self.path.read_text(encoding="utf-8").splitlines()
                if line.strip() and json.loads(line).get("step", 0) <= step]
        write_text_atomic(self.path, "".join(r + "\n" for r in rows))

    def write(self, row: dict) -> None:
        if self.enabled:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")
