"""Checkpoints: safetensors tensors plus JSON, committed atomically. Never pickle.

A checkpoint is three files in a run directory (DESIGN.md, "A run directory"):

- ``model.safetensors``   -- the model's weights;
- ``trainer.safetensors`` -- optimiser moments, every RNG state, the data position;
- ``state.json``          -- step, best metric, ``format_version``, library versions, non-tensor state.

The three must change together, so a save is a two-phase commit: the files are written and fsynced
into ``DIR/.next/``, a ``COMPLETE`` marker is written there, then each file is renamed into ``DIR``
(``os.replace`` is atomic per file) and ``.next`` is removed. A kill before the marker leaves the
previous checkpoint untouched (``.next`` is discarded on the next open); a kill after it is rolled
forward on the next open (:func:`recover`). Either way the last good checkpoint survives.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, load_model as _load_model, save_file, save_model
from torch import nn

from seqlab.errors import SeqlabError
from seqlab.io import read_json, write_fsynced

FORMAT_VERSION = 1
FILES = ("model.safetensors", "trainer.safetensors", "state.json")


def _contiguous(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k: v.detach().contiguous().cpu() for k, v in tensors.items()}


def save(directory: str | Path, model: nn.Module, trainer_tensors: dict[str, torch.Tensor],
         state: dict[str, Any]) -> None:
    """Commit one checkpoint into ``directory`` (see the module docstring for the protocol)."""
    directory = Path(directory)
    nxt = directory / ".next"
    if nxt.exists():
        shutil.rmtree(nxt)
    nxt.mkdir(parents=True)
    step = str(state.get("step", 0))
    # save_model stores a tied matrix (embedding = output projection) once
    save_model(model, str(nxt / "model.safetensors"), metadata={"step": step})
    save_file(_contiguous(trainer_tensors), nxt / "trainer.safetensors", metadata={"step": step})
    state = {"format_version": FORMAT_VERSION, **state}
    write_fsynced(nxt / "state.json", (json.dumps(state, indent=1, sort_keys=True) + "\n").encode())
    for name in ("model.safetensors", "trainer.safetensors"):  # safetensors does not fsync
        with open(nxt / name, "rb") as f:
            os.fsync(f.fileno())
    write_fsynced(nxt / "COMPLETE", b"")
    _roll_forward(directory)


def _roll_forward(directory: Path) -> None:
    nxt = directory / ".next"
    for name in FILES:
        if (nxt / name).exists():
            os.replace(nxt / name, directory / name)
    shutil.rmtree(nxt)


def recover(directory: str | Path) -> None:
    """Finish or discard a save that a kill interrupted."""
    directory = Path(directory)
    nxt = directory / ".next"
    if nxt.is_dir():
        if (nxt / "COMPLETE").exists():
            _roll_forward(directory)
        else:
            shutil.rmtree(nxt)


def exists(directory: str | Path) -> bool:
    recover(directory)
    return all((Path(directory) / name).exists() for name in FILES)


def load_state(directory: str | Path) -> dict[str, Any]:
    directory = Path(directory)
    recover(directory)
    path = directory / "state.json"
    state = read_json(path, "checkpoint state", "train the run with `seqlab train` (again, if it is damaged)",
                      expect=dict)
    version = state.get("format_version")
    if version != FORMAT_VERSION:
        raise SeqlabError(f"{path} has checkpoint format_version {version!r}, this seqlab reads {FORMAT_VERSION}; "
                          "use the seqlab version that wrote it")
    return state


def load_model(model: nn.Module, path: str | Path) -> None:
    """Load weights written by :func:`save` into ``model`` (strict: every key must fit)."""
    if not Path(path).exists():
        raise SeqlabError(f"{path} not found; the run directory has no checkpoint")
    try:
        missing, unexpected = _load_model(model, str(path), strict=False)
    except Exception as e:  # damaged file, or shapes that do not fit the configured model
        raise SeqlabError(f"cannot load {path} into the configured model ({e})") from None
    if missing or unexpected:
        raise SeqlabError(f"{path} does not fit the configured model: missing {sorted(missing)[:5]}, "
                          f"unexpected {sorted(unexpected)[:5]}")


def load_tensors(path: str | Path) -> dict[str, torch.Tensor]:
    try:
        return load_file(str(path))
    except FileNotFoundError:
        raise SeqlabError(f"{path} not found; the run directory has no checkpoint") from None
    except Exception as e:  # safetensors raises its own error types for damaged files
        raise SeqlabError(f"{path} is not a valid safetensors file ({e})") from None


# --- optimiser state as flat tensors (safetensors holds tensors only; the rest goes to state.json) ---


def optimizer_tensors(optimizer: torch.optim.Optimizer) -> dict[str, torch.Tensor]:
    out = {}
    for index, state in optimizer.state_dict()["state"].items():
        for name, value in state.items():
            if torch.is_tensor(value):
                out[f"optim.{index}.{name}"] = value
    return out


def restore_optimizer(optimizer: torch.optim.Optimizer, tensors: dict[str, torch.Tensor]) -> None:
    sd = optimizer.state_dict()
    state: dict[int, dict[str, torch.Tensor]] = {}
    for key, value in tensors.items():
        if key.startswith("optim."):
            _, index, name = key.split(".", 2)
            state.setdefault(int(index), {})[name] = value
    sd["state"] = state
    optimizer.load_state_dict(sd)


def rng_tensors(generator: torch.Generator) -> dict[str, torch.Tensor]:
    """Every random stream training draws from: torch's global CPU/CUDA RNGs and the data generator."""
    out = {"rng.torch_cpu": torch.get_rng_state(), "rng.data": generator.get_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        for i, s in enumerate(torch.cuda.get_rng_state_all()):
            out[f"rng.cuda.{i}"] = s
    return out


def restore_rng(generator: torch.Generator, tensors: dict[str, torch.Tensor]) -> None:
    torch.set_rng_state(tensors["rng.torch_cpu"])
    generator.set_state(tensors["rng.data"])
    cuda = sorted((k for k in tensors if k.startswith("rng.cuda.")), key=lambda k: int(k.rsplit(".", 1)[1]))
    if cuda and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([tensors[k] for k in cuda])
