"""The machine a figure was measured on, from /proc/cpuinfo: the CPU model and the ISA flags that decide which CPU
kernels torch can use. Torch-free, so that the benchmarks (bench/common.py, start-up time included), the docs
build's recorded results (docs/page_results.py) and the decode-kernel choice (seqlab.training.devices) all name
the machine the same way from one reading."""

from __future__ import annotations

import contextlib
import os
import platform

ISA_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16")  # what decides the CPU kernels torch can use


def cpuinfo() -> dict[str, str]:
    """The first processor's block of /proc/cpuinfo as {field: value} (enough: the cores of one machine match);
    empty where there is no /proc."""
    fields: dict[str, str] = {}
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as info:
        for line in info:
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    return fields


def cpu_model(fields: dict[str, str] | None = None) -> str:
    """The CPU's model name (e.g. "AMD EPYC"), or the platform's processor string where /proc has none."""
    fields = cpuinfo() if fields is None else fields
    return fields.get("model name") or platform.processor() or platform.machine()


def cpu_line() -> str:
    """The CPU model, its cores and its ISA flags, e.g. ``AMD EPYC, 2 cores; avx2 yes, avx512f yes, avx512_bf16 yes,
    amx_bf16 no``: the line benchmark sections and recorded docs results carry."""
    fields = cpuinfo()
    flags = set(fields.get("flags", "").split())
    isa = ", ".join(f"{flag} {'yes' if flag in flags else 'no'}" for flag in ISA_FLAGS)
    return f"{cpu_model(fields)}, {os.cpu_count()} cores; {isa}"
