"""What an exercise of the course is: the function a learner writes, the cases it is called on, seqlab's own
implementation that grades it, and the usual wrong answers it recognises by name.

A chapter's modules, split by topic (``ch06_attention.py`` and ``ch06_layers.py``, ...), each hold a tuple
``EXERCISES`` of :class:`Exercise`; the catalogue (:mod:`seqlab.course.catalogue`) lists the chapters. An exercise's
``reference`` calls seqlab's verified code (the function the tutorial shows, tested against torch.nn, sacreBLEU,
gensim, ...), never a second copy of it; each :class:`Mistake` computes a known wrong answer *with* that code (e.g.
the reference fed queries pre-multiplied by sqrt(d_k): the unscaled scores), so that a learner's output equal to it
can be named.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from seqlab.base.bounds import chain_bound

Tolerance = Callable[["Case", Any], float]  # (case, the dtype of the learner's output) -> an absolute bound
FLOATS = ("float64", "float32", "bfloat16", "float16")  # the dtypes a tolerance is taken at (seqlab.base.bounds.u)


def float_name(dtype: Any) -> str:
    """``dtype`` (torch's, numpy's or a name) as one of :data:`FLOATS`; float64 for anything else (an int)."""
    name = str(dtype).replace("torch.", "")
    return name if name in FLOATS else "float64"


@dataclass(frozen=True)
class Case:
    """One call of the learner's function: its arguments, the named sizes a failure report shows (``batch 2,
    head 3, seq 5, ...``) and the seed its random inputs were drawn with."""

    args: tuple[Any, ...]
    sizes: Mapping[str, int] = field(default_factory=dict)
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    seed: int | None = None
    n: int = 1  # the longest reduction (sum or dot product) computing one output element, for the tolerance
    magnitude: float = 1.0  # a bound on the sum of the absolute values of the terms of that reduction

    def describe(self) -> str:
        """``batch 2, head 3, seq 5; seed 1``: what a report names the case by."""
        text = ", ".join(f"{name} {value}" for name, value in self.sizes.items())
        return f"{text}; seed {self.seed}" if self.seed is not None and text else text or "the fixed input"


@dataclass(frozen=True)
class Mistake:
    """A usual wrong answer: ``compute`` takes the case's arguments (as the reference does) and returns what the
    mistake outputs; ``says`` is the sentence a learner reads when their output equals it: what is wrong, and the
    notes' equation it departs from (a string, formatted with the case's sizes, or a function of the case)."""

    name: str  # a short identifier, e.g. "unscaled", "mask-inverted": what tests and reports call it
    says: str | Callable[[Case], str]
    compute: Callable[..., Any]

    def sentence(self, case: Case) -> str:
        return self.says(case) if callable(self.says) else self.says.format(**case.sizes)


def exact(case: Case, dtype: Any) -> float:
    """Exact answers (ids, tokens, counts, a path): no rounding in them, so no tolerance."""
    return 0.0


def rounding(products: int, gain: float = 1.0) -> Tolerance:
    """A tolerance from the error bound of ``products`` chained reductions, each of length <= ``case.n`` over
    terms whose absolute values sum to <= ``case.magnitude``, the error of each passed on with a gain <= ``gain``
    (:func:`seqlab.base.bounds.chain_bound`), at the unit roundoff of the learner's output dtype; doubled,
    since the learner's computation and seqlab's each carry that error. (The checker adds the rounding of each
    side's final value to that dtype, 2u|expected|.)"""

    def tolerance(case: Case, dtype: Any) -> float:  # dtype: a name of FLOATS (the checker's float_name)
        return 2.0 * chain_bound(products, case.n, case.magnitude, dtype, gain)

    return tolerance


@dataclass(frozen=True)
class Exercise:
    """One exercise: write ``name`` with ``signature`` so that it equals ``reference`` on every case."""

    id: str  # "06.2": chapter and number
    name: str  # the function the learner defines (and the name `seqlab course check` looks for in a file)
    title: str
    section: str  # the notes' section, as the docstrings' tags name it: "Transformer › Scaled dot-product attention"
    signature: str  # "scaled_dot_product_attention(q, k, v, mask=None)": what to write
    statement: str  # the task in Markdown: inputs and their shapes, what to return
    reference: Callable[..., Any]  # seqlab's own implementation, with the learner's signature
    cases: Callable[[], list[Case]]  # the inputs, at several sizes that all differ, a few fixed seeds
    mistakes: tuple[Mistake, ...]
    tolerance: Tolerance = exact
    follows: str = ""  # where the notes and seqlab depart: which of the two this exercise checks, and why

    @property
    def chapter(self) -> str:
        return self.id.split(".")[0]

    def starter(self) -> str:
        """The code a learner starts from: the signature, a docstring naming the task, no body."""
        return f'def {self.signature}:\n    """{self.title} (the notes: {self.section})."""\n    ...\n'


def sqrt_text(value: float) -> str:
    """sqrt(d_k) as a report shows it: ``2`` for 4, ``1.73`` for 3."""
    root = math.sqrt(value)
    return f"{root:g}" if root.is_integer() else f"{root:.3g}"


def generator(seed: int):
    """A torch random generator of its own for a case's inputs (the caller's random state is left alone)."""
    import torch

    return torch.Generator().manual_seed(seed)


def randn(gen: Any, *shape: int):
    """Standard normal float64 inputs (float64, so that the tolerance is float64's rounding bound unless the
    learner returns float32)."""
    import torch

    return torch.randn(*shape, generator=gen, dtype=torch.float64)
