"""Weights as numpy arrays, for the models the numba kernels train (word2vec, GloVe) without torch.

:class:`ArrayModel` holds named embedding tables with the attribute and ``state_dict`` names of the
``nn.Module`` it stands for (``input.weight``, ``word_bias.weight``, ...), so the checkpoint files
(:mod:`seqlab.training.checkpoint`) are the same whichever engine wrote them, and a run trained by one engine
loads into the other. It has the few ``nn.Module`` methods the Trainer and the checkpoints call
(``state_dict``, ``load_state_dict``, ``train``, ``eval``); the arrays are updated in place by the kernels.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


class Table:
    """One embedding table: ``weight``, a (rows, dim) float32 array (``nn.Embedding.weight`` without torch)."""

    def __init__(self, weight: np.ndarray):
        self.weight = weight

    def __repr__(self) -> str:
        return f"Table{tuple(self.weight.shape)}"


class ArrayModel:
    """Named :class:`Table` attributes (``None`` for an absent one, as an ``nn.Module`` attribute set to None)."""

    def __init__(self, **tables: np.ndarray | None):
        self._names = [name for name, weight in tables.items() if weight is not None]
        for name, weight in tables.items():
            setattr(self, name, None if weight is None else Table(weight))

    def state_dict(self) -> dict[str, np.ndarray]:
        """{``NAME.weight``: the array} (the arrays themselves, not copies, as torch's state_dict)."""
        return {f"{name}.weight": getattr(self, name).weight for name in self._names}

    def load_state_dict(self, state_dict: Mapping[str, np.ndarray], strict: bool = True) -> tuple[list[str], list[str]]:
        """Copy the arrays of ``state_dict`` into the tables; returns (missing keys, unexpected keys) as torch's
        does, raising RuntimeError on a shape that does not fit (or, with ``strict``, a key that does not)."""
        own = self.state_dict()
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        if strict and (missing or unexpected):
            raise RuntimeError(f"missing keys {missing}, unexpected keys {unexpected}")
        for key, value in state_dict.items():
            if key in own:
                if tuple(value.shape) != tuple(own[key].shape):
                    raise RuntimeError(f"size mismatch for {key}: copying a param with shape {tuple(value.shape)}, "
                                       f"the shape in the current model is {tuple(own[key].shape)}")
                own[key][...] = value
        return missing, unexpected

    def train(self, mode: bool = True) -> ArrayModel:
        return self

    def eval(self) -> ArrayModel:
        return self

    def __repr__(self) -> str:
        return f"ArrayModel({', '.join(f'{n}={getattr(self, n)!r}' for n in self._names)})"


def weight_array(table: Any) -> np.ndarray:
    """The weight of an embedding table as a numpy array: a :class:`Table`'s own, or an ``nn.Embedding``'s
    (moved to the CPU)."""
    weight = table.weight
    return weight if isinstance(weight, np.ndarray) else weight.detach().cpu().numpy()
