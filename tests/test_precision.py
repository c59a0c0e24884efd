"""bf16 where it is emulated: ``train.precision=auto`` follows the *effective* instruction set (what
``ONEDNN_MAX_CPU_ISA`` leaves, not only /proc/cpuinfo), and an explicit bf16 on such a CPU warns once, naming the
measured slowdown and the fix, then trains as asked."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from seqlab.training import devices

CPU_FLAGS = set(Path("/proc/cpuinfo").read_text().split()) if Path("/proc/cpuinfo").exists() else set()
NATIVE = bool({"amx_bf16", "avx512_bf16"} & CPU_FLAGS)


def _probe(env: dict[str, str]) -> list[str]:
    """(reason or "native", auto precision, the warning or "-") in a fresh process under ``env``: oneDNN reads
    its cap once, when it first dispatches."""
    code = ("import torch; from seqlab.training import devices as d; lines = [];"
            "p = d.resolve_precision('bf16', torch.device('cpu'), warn=lines.append);"
            "print(d.bf16_emulation_reason() or 'native'); print(d.resolve_precision('auto', torch.device('cpu')));"
            "print(lines[0] if lines else '-'); print(p)")
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True, text=True,
                         check=True, timeout=120).stdout
    return out.strip().splitlines()


@pytest.mark.skipif(not NATIVE, reason="needs a CPU with AMX or AVX-512 bf16 to compare against its capped self")
def test_a_onednn_cap_below_bf16_makes_auto_fp32_and_explicit_bf16_warn():
    reason, auto, warning, kept = _probe({"ONEDNN_MAX_CPU_ISA": "AVX2"})
    assert "ONEDNN_MAX_CPU_ISA=AVX2" in reason and auto == "fp32" and kept == "bf16"
    assert warning.startswith("warning: train.precision=bf16 on a CPU without native bf16")
    assert "x slower than fp32 here; use train.precision=fp32" in warning
    slowdown = float(warning.split("measured ")[1].split("x slower")[0])
    assert slowdown >= 2  # a bf16 product through the AVX2 path: 20-400x measured

    reason, auto, warning, kept = _probe({"ONEDNN_MAX_CPU_ISA": "ALL"})
    assert (reason, auto, warning, kept) == ("native", "bf16", "-", "bf16")


def test_no_native_bf16_in_cpuinfo_means_emulated(monkeypatch, tmp_path):
    fake = tmp_path / "cpuinfo"
    fake.write_text("flags : fpu sse avx avx2 fma\n")
    real = Path.read_text
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: real(fake if str(self) == "/proc/cpuinfo" else self,
                                                                    *a, **k))
    assert devices.bf16_emulation_reason() == "the CPU lists neither AMX nor AVX-512 bf16 instructions"
    assert devices.resolve_precision("auto", torch.device("cpu")) == "fp32"
    assert devices.resolve_precision("fp32", torch.device("cpu"), warn=pytest.fail) == "fp32"


def test_fp16_on_cpu_is_refused():
    with pytest.raises(devices.SeqlabError, match="needs CUDA"):
        devices.resolve_precision("fp16", torch.device("cpu"))
