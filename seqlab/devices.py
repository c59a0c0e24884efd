"""Where training runs: the device, the processes under ``torchrun`` (and the signals that stop them) and the
precision.

Multi-process and multi-node training is PyTorch DDP (DESIGN.md): ``torchrun`` sets ``WORLD_SIZE``, ``RANK`` and
``LOCAL_RANK``; every process joins one group (gloo on CPU, NCCL on CUDA), and only rank 0 writes.
bf16 autocast is the default precision where the hardware computes in bf16 (CUDA with bf16, AMX or AVX-512 bf16
CPUs: ../shared/notes/cpu-performance.md), fp32 elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass
from pathlib import Path

import torch

from seqlab import signals
from seqlab.errors import SeqlabError


@dataclass(frozen=True)
class Dist:
    rank: int = 0
    world: int = 1
    local_rank: int = 0

    @property
    def main(self) -> bool:
        return self.rank == 0

    def barrier(self) -> None:
        """Wait until every process gets here (e.g. rank 0 has written files the others read)."""
        if self.world > 1:
            import torch.distributed as torch_dist

            torch_dist.barrier()

    def share(self, obj):
        """Rank 0's ``obj`` (a small picklable value of seqlab's own, never user input) on every process."""
        if self.world == 1:
            return obj
        import torch.distributed as torch_dist

        box = [obj]
        device = torch.device("cuda", self.local_rank) if torch_dist.get_backend() == "nccl" else None
        torch_dist.broadcast_object_list(box, src=0, device=device)
        return box[0]


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


class StopSignals:
    """SIGINT (Ctrl-C) and SIGTERM (what schedulers and ``docker stop`` send) become a flag checked between
    steps, so the step in flight finishes and is saved; a second signal stops at once."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self):
        self.signum: int | None = None
        self._handling = signals.handling(self._handle, *self.SIGNALS)

    @property
    def flag(self) -> bool:
        return self.signum is not None

    def __enter__(self):
        self._handling.__enter__()
        return self

    def _handle(self, signum, frame):
        if self.signum is not None:  # the second signal: stop at once
            raise KeyboardInterrupt
        self.signum = signum

    def __exit__(self, *exc):
        return self._handling.__exit__(*exc)
