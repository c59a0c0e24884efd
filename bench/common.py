"""Shared helpers for the benchmarks in bench/: timing, peak memory, and bench/RESULTS.md sections.

Each benchmark owns one section of bench/RESULTS.md between ``<!-- NAME:start -->`` and
``<!-- NAME:end -->`` markers and rewrites only that section, so benchmarks run in any order.
Every benchmark prints one JSON line last, with ``ratio`` = seqlab's figure over the peer's,
oriented so that above 1 means seqlab is better (DESIGN.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
HEADER = "# Benchmark results\n\nEach section is rewritten by the benchmark named in its heading. Figures within one\nsection come from one run; never compare figures across sections or runs (this machine's speed\nswings by about 25% from minute to minute).\n"


def machine() -> str:
    """A one-line description of the machine (CPU model and ISA flags) and library versions."""
    import torch

    return f"{cpu_line()}; Python {platform.python_version()}, torch {torch.__version__}"


ISA_FLAGS = ("avx512f", "avx512_bf16", "amx_bf16")  # what decides the CPU kernels torch can use


def cpu_line() -> str:
    """The CPU model and its ISA flags from /proc/cpuinfo, e.g. ``AMD EPYC; avx512f yes, avx512_bf16 yes, amx_bf16 no``.

    Needs no torch, so benchmarks of start-up time can print it.
    """
    fields: dict[str, str] = {}
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as info:
        for line in info:  # the first processor's block is enough
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    model = fields.get("model name") or platform.processor() or platform.machine()
    flags = set(fields.get("flags", "").split())
    isa = ", ".join(f"{flag} {'yes' if flag in flags else 'no'}" for flag in ISA_FLAGS)
    return f"{model}, {os.cpu_count()} cores; {isa}"


def write_section(name: str, markdown: str) -> None:
    """Replace the section ``name`` of bench/RESULTS.md with ``markdown`` (atomic write)."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    text = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else HEADER
    block = f"{start}\n{markdown.rstrip()}\n\n_Recorded {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine()}._\n{end}"
    if start in text and end in text:
        before, rest = text.split(start, 1)
        _, after = rest.split(end, 1)
        text = before + block + after
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    tmp = RESULTS.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, RESULTS)


def peak_rss_mib() -> float:
    """Peak resident set size of this process, in MiB.

    Linux's VmHWM belongs to the address space, which exec replaces; ``ru_maxrss`` instead carries the
    parent's peak over fork + exec, so a small child of a big benchmark would report the parent's size.
    """
    with contextlib.suppress(OSError), open("/proc/self/status") as status:  # no /proc: ru_maxrss below
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_json_subprocess(code: str, *args: str, timeout: float = 1800) -> dict:
    """Run ``python -c code args...`` in a fresh process and parse the last stdout line as JSON.

    Used to measure each side's peak RSS on its own.
    """
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                         timeout=timeout, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def median(xs: list[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


class Timer:
    def __enter__(self):
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.t0
