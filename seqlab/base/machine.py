"""The machine a figure was measured on, from /proc/cpuinfo: the CPU model and the ISA flags that decide which CPU
kernels torch can use. Torch-free, so that the benchmarks (bench/common.py, start-up time included), the docs
build's recorded results (docs/page_results.py) and the decode-kernel choice (seqlab.training.devices) all name
the machine the same way from one reading."""

from __future__ import annotations

import contextlib
import os
import platform

ISA_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16")  # what decides the CPU kernels torch can use

# Haswell's features (LLVM's names), AVX-512 explicitly off: what numba compiles for under the AVX2 cap.
HASWELL_FEATURES = ",".join([
    "+64bit", "+cmov", "+cx8", "+cx16", "+fxsr", "+mmx", "+sahf", "+popcnt", "+sse", "+sse2", "+sse3", "+ssse3",
    "+sse4.1", "+sse4.2", "+avx", "+avx2", "+fma", "+f16c", "+bmi", "+bmi2", "+lzcnt", "+movbe", "+xsave",
    "+xsaveopt", "+fsgsbase", "+rdrnd", "+pclmul", "+aes", "+invpcid", "-avx512f",
])

# The instruction-set caps: the variables that make each library dispatch as on a CPU of that level (read when the
# library loads, so they must be set before numba, torch or numpy is imported). tests/test_isa_caps.py explains and
# checks each one; the benches run capped with --isa (bench/common.py).
ISA_CAPS = {
    "avx2": {"NUMBA_CPU_NAME": "haswell", "NUMBA_CPU_FEATURES": HASWELL_FEATURES, "ATEN_CPU_CAPABILITY": "avx2",
             "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "OPENBLAS_CORETYPE": "Haswell"},
    "generic": {"NUMBA_CPU_NAME": "generic", "NUMBA_CPU_FEATURES": "", "ATEN_CPU_CAPABILITY": "default",
                "ONEDNN_MAX_CPU_ISA": "SSE41", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2", "OPENBLAS_CORETYPE": "Nehalem"},
}


def isa_cap() -> str | None:
    """The level of :data:`ISA_CAPS` this process runs under (every one of its variables set as the level sets
    them), or None."""
    return next((level for level, caps in ISA_CAPS.items()
                 if all(os.environ.get(name) == value for name, value in caps.items())), None)


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
    cap = isa_cap()
    return f"{cpu_model(fields)}, {os.cpu_count()} cores; {isa}" + (f"; capped to {cap.upper()}" if cap else "")
