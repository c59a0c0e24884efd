"""Where training runs: the device, the processes under ``torchrun`` (and the signals that stop them:
:class:`~seqlab.signals.StopSignals`, the training loop's part of the one policy of :mod:`seqlab.signals`) and the
precision. Thread counts are the entry point's (seqlab.api.train_run, the CLI): nothing here sets them.

Multi-process and multi-node training is PyTorch DDP (docs/howto/multi-node.md): ``torchrun`` sets ``WORLD_SIZE``,
``RANK`` and ``LOCAL_RANK``; every process joins one group (gloo on CPU, NCCL on CUDA), and only rank 0 writes.
bf16 autocast is the default precision where the hardware computes in bf16 (CUDA with bf16, AMX or AVX-512 bf16
CPUs: ../shared/notes/cpu-performance.md), fp32 elsewhere.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from seqlab.base.errors import SeqlabError
from seqlab.base.signals import StopSignals  # noqa: F401 - the training loop's part of the one policy (signals.py)

if TYPE_CHECKING:  # annotations only: torch is imported where a function uses it (word2vec and GloVe run without it)
    import torch

log = logging.getLogger("seqlab")


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
        import torch
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


def cuda_present() -> bool:
    """Whether torch may find a CUDA device here, asked without importing torch: False where torch cannot be
    imported or no CUDA driver counts a device (``libcuda``'s ``cuDeviceGetCount``, which honours
    ``CUDA_VISIBLE_DEVICES``), so a run that would land on the CPU (word2vec and GloVe's numba engine) never
    loads torch; elsewhere ``torch.cuda.is_available()`` (through :func:`resolve_device`) decides as before."""
    import ctypes
    import importlib.util
    import sys

    if "torch" in sys.modules:
        return bool(sys.modules["torch"].cuda.is_available())
    try:
        if importlib.util.find_spec("torch") is None:
            return False
    except (ImportError, ValueError):
        return False
    for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
        try:
            driver = ctypes.CDLL(name)
        except OSError:
            continue
        count = ctypes.c_int(0)
        try:
            return driver.cuInit(0) == 0 and driver.cuDeviceGetCount(ctypes.byref(count)) == 0 and count.value > 0
        except AttributeError:  # not the driver library
            return False
    return False


def resolve_device(name: str, local_rank: int = 0) -> torch.device:
    import torch

    if name == "cuda" and not torch.cuda.is_available():
        raise SeqlabError("train.device=cuda but no CUDA device is available; use --set train.device=cpu")
    if name == "cuda" or (name == "auto" and torch.cuda.is_available()):
        return torch.device("cuda", local_rank)
    return torch.device("cpu")


def inference_device(device: str | torch.device | None) -> torch.device:
    """The device a loaded model runs on (``seqlab.load(..., device=)``): None or "auto" is CUDA when present,
    else the CPU; "cpu", "cuda" and "cuda:N" (or a torch.device of those) as named. Anything else is an error
    naming the accepted values, not torch's own."""
    import torch

    if device is None or device == "auto":
        return resolve_device("auto")
    try:
        chosen = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        chosen = None
    if chosen is None or chosen.type not in ("cpu", "cuda"):
        raise SeqlabError(f'device must be "auto", "cpu", "cuda" or "cuda:N", got {device!r}')
    if chosen.type == "cuda" and not torch.cuda.is_available():
        raise SeqlabError(f'device={str(device)!r} but no CUDA device is available; use device="cpu" (or "auto")')
    return chosen



def check_inference_device(device: str | torch.device | None) -> None:
    """Refuse what :func:`inference_device` refuses; None, "auto" and "cpu", which it takes, without importing
    torch (reading word vectors needs none)."""
    if device is None or (isinstance(device, str) and device in ("auto", "cpu")):
        return
    inference_device(device)

# oneDNN ISA levels (ONEDNN_MAX_CPU_ISA, the cap on what oneDNN dispatches to) at which it has bf16 instructions
# (AVX512_CORE_BF16, AMX, AVX10) or not; CPU bf16 matrix products run through oneDNN.
_ONEDNN_BF16_ISAS = ("AVX512_CORE_BF16", "AVX512_CORE_FP16", "AVX512_CORE_AMX", "AVX512_CORE_AMX_FP16",
                     "AVX10_1_512", "AVX10_1_512_AMX", "AVX10_1_512_AMX_FP16", "AVX10_2_512", "AVX10_2_512_AMX_2",
                     "ALL", "DEFAULT", "")


def bf16_emulation_reason() -> str | None:
    """Why this CPU computes bf16 by emulation, or None where it has native bf16 as this process runs.

    The *effective* instruction set, not only /proc/cpuinfo: the CPU must list AMX or AVX-512 bf16, oneDNN (which
    CPU bf16 matrix products run through) must not be capped below them by ``ONEDNN_MAX_CPU_ISA``. ATen's own cap
    (``ATEN_CPU_CAPABILITY``, ``torch.backends.cpu.get_cpu_capability()``) leaves them native: measured on a Xeon
    with AMX, a 256^3 bf16 product is 0.2x the fp32 time at ``avx2`` and ``default``, 70-100x at
    ``ONEDNN_MAX_CPU_ISA=AVX2``."""
    try:
        flags = set(Path("/proc/cpuinfo").read_text().split())
    except OSError:
        flags = set()
    if not {"amx_bf16", "avx512_bf16"} & flags:
        return "the CPU lists neither AMX nor AVX-512 bf16 instructions"
    onednn = os.environ.get("ONEDNN_MAX_CPU_ISA", os.environ.get("DNNL_MAX_CPU_ISA", "")).strip().upper()
    if onednn not in _ONEDNN_BF16_ISAS:
        return f"ONEDNN_MAX_CPU_ISA={onednn} caps oneDNN below its bf16 instructions"
    return None


def cpu_has_fast_bf16() -> bool:
    """Native bf16 as this process runs (:func:`bf16_emulation_reason`): bf16 autocast then doubles training speed
    (notes/cpu-performance.md); where it is emulated, bf16 matrix products run 20-400x slower than fp32."""
    return bf16_emulation_reason() is None


@functools.cache  # once per process
def bf16_slowdown(n: int = 256, reps: int = 5, fp32_calls: int = 8) -> float:
    """Seconds of an n x n x n bf16 matrix product over the same in fp32 on this CPU at the process's thread
    count, each the best of its calls, interleaved (``reps`` rounds of one bf16 call and ``fp32_calls`` fp32
    calls): about 0.05-0.5 with native bf16, 20-400 where it is emulated (then about 0.5 s in all). The fp32
    product takes a fraction of a millisecond, less than a time slice: while other work holds a core, a call
    waits whenever its partner thread is descheduled, and with five calls every one of them sometimes did (a
    ratio of 1.7-2.3 where it is 19-37, on a 2-core AMD EPYC beside a training run); the best of 40 is one that
    ran undisturbed. (The thread count is the process owner's to set: no change here.)"""
    import torch

    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(n, n, generator=gen), torch.randn(n, n, generator=gen)
    pairs = {dtype: (a.to(dtype), b.to(dtype)) for dtype in (torch.float32, torch.bfloat16)}
    calls = {torch.float32: fp32_calls, torch.bfloat16: 1}
    best = dict.fromkeys(pairs, math.inf)
    for x, y in pairs.values():  # warm: oneDNN generates its kernel on first use
        x @ y
    for _ in range(reps):
        for dtype, (x, y) in pairs.items():
            for _ in range(calls[dtype]):
                t0 = time.perf_counter()
                x @ y
                best[dtype] = min(best[dtype], time.perf_counter() - t0)
    return best[torch.bfloat16] / max(best[torch.float32], 1e-9)


def emulated_bf16_warning(what: str, fix: str) -> str | None:
    """One warning line for an explicit bf16 request (``what``) on a CPU that emulates bf16, naming the measured
    slowdown and ``fix``; None where bf16 is native, or where the measurement finds it no slower than fp32."""
    why = bf16_emulation_reason()
    if why is None or bf16_slowdown() < 2.0:
        return None
    return (f"warning: {what} on a CPU without native bf16 ({why}): bf16 matrix products measured "
            f"{bf16_slowdown():.0f}x slower than fp32 here; use {fix}")


def resolve_precision(name: str, device: torch.device, warn: Callable[[str], Any] | None = None) -> str:
    """The precision to train in: ``name`` ("auto", "fp32", "bf16", "fp16") on ``device``. "auto" is bf16 where
    the device computes bf16 natively (CUDA with bf16; :func:`cpu_has_fast_bf16`), fp32 elsewhere; an explicit
    bf16 on a CPU that emulates it is kept, with one line to ``warn`` (the log) naming the slowdown and the fix."""
    import torch

    if name == "fp16" and device.type != "cuda":
        raise SeqlabError("train.precision=fp16 needs CUDA; on CPU use bf16 or fp32")
    if name == "bf16" and device.type == "cpu":
        line = emulated_bf16_warning("train.precision=bf16", "train.precision=fp32 (or auto)")
        if line:
            (warn or log.warning)(line)
    if name != "auto":
        return name
    if device.type == "cuda":
        return "bf16" if torch.cuda.is_bf16_supported() else "fp32"
    return "bf16" if cpu_has_fast_bf16() else "fp32"


def autocast(precision: str, device: torch.device):
    import torch

    if precision == "fp32":
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return torch.autocast(device_type=device.type, dtype=dtype)
