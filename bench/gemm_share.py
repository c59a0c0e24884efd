"""Where a training step's time goes: its GEMMs, their own peak, and the rest (used by bench/lm_throughput.py).

- :func:`capture_gemms` runs steps under a dispatch mode that times every ``mm``/``addmm``/``bmm``/``baddbmm``
  call synchronously (CPU) and records its shapes, strides and dtype.
- :func:`layer_peak` replays each captured GEMM alone on fresh tensors with the same shapes and strides and
  keeps its best time: FLOPs of the step's GEMMs over their summed best times is the bf16 peak *of the layer
  shapes actually used* (the issue's yardstick; a 2048^3 matmul runs faster than these).
- :func:`other_ops` lists the non-GEMM operators by self time from the torch profiler.
"""

from __future__ import annotations

import time
from collections import defaultdict

import torch
from torch.utils._python_dispatch import TorchDispatchMode

GEMMS = ("mm", "addmm", "bmm", "baddbmm")


def _flops(name: str, shapes: list[tuple[int, ...]]) -> int:
    a, b = shapes[-2], shapes[-1]  # addmm/baddbmm: (bias, a, b)
    if name in ("bmm", "baddbmm"):
        return 2 * a[0] * a[1] * a[2] * b[2]  # batch * m * k * n
    return 2 * a[0] * a[1] * b[1]  # m * k * n


class _GemmTimer(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.calls: dict[tuple, list[float]] = defaultdict(list)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.__name__.split(".")[0]
        if name not in GEMMS:
            return func(*args, **(kwargs or {}))
        tensors = tuple((tuple(t.shape), t.stride(), t.dtype) for t in args if isinstance(t, torch.Tensor))
        start = time.perf_counter()
        out = func(*args, **(kwargs or {}))
        self.calls[(name, tensors, tuple(a for a in args if not isinstance(a, torch.Tensor)),
                    tuple(sorted((kwargs or {}).items())))].append(time.perf_counter() - start)
        return out


def capture_gemms(step, n_steps: int = 3) -> dict:
    """Run ``step`` n_steps times timing its GEMMs: {"calls": {key: [seconds]}, "step_s": median step time
    under the same mode, "gemm_s": GEMM seconds per step, "gemm_flops": GEMM FLOPs per step}."""
    mode, step_times = _GemmTimer(), []
    with mode:
        for _ in range(n_steps):
            start = time.perf_counter()
            step()
            step_times.append(time.perf_counter() - start)
    gemm_s = sum(sum(ts) for ts in mode.calls.values()) / n_steps
    flops = sum(_flops(key[0], [s for s, _, _ in key[1]]) * len(ts) for key, ts in mode.calls.items()) / n_steps
    return {"calls": dict(mode.calls), "step_s": sorted(step_times)[n_steps // 2], "gemm_s": gemm_s,
            "gemm_flops": flops}


def _fresh(shape, stride, dtype) -> torch.Tensor:
    """A random tensor with exactly this shape and these strides (zero strides: a broadcast bias)."""
    size = 1 + sum((n - 1) * s for n, s in zip(shape, stride) if n > 0)
    return torch.as_strided(torch.randn(size).to(dtype), shape, stride)


def layer_peak(captured: dict, reps: int = 5) -> float:
    """FLOP/s of the captured GEMMs each run alone at its best: sum of FLOPs / sum of best times."""
    total_flops = total_s = 0.0
    for (name, tensors, others, kwargs), ts in captured["calls"].items():
        args = [_fresh(*t) for t in tensors]
        op = getattr(torch, name)
        op(*args, *others, **dict(kwargs))
        best = float("inf")
        for _ in range(reps):
            start = time.perf_counter()
            op(*args, *others, **dict(kwargs))
            best = min(best, time.perf_counter() - start)
        calls = len(ts)
        total_flops += _flops(name, [s for s, _, _ in tensors]) * calls
        total_s += best * calls
    return total_flops / total_s


def other_ops(step, n_steps: int = 2, top: int = 8) -> list[tuple[str, float]]:
    """The non-GEMM operators with the most self CPU time per step, as (name, seconds per step)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(n_steps):
            step()
    rows = [(e.key.removeprefix("aten::"), e.self_cpu_time_total / 1e6 / n_steps) for e in prof.key_averages()
            if e.key.removeprefix("aten::") not in GEMMS and e.key.startswith("aten::")]
    return sorted(rows, key=lambda r: -r[1])[:top]
