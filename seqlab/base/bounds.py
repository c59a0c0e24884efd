"""Floating-point error bounds that tolerances are taken from: the numerical tests' and the course checker's
(:mod:`seqlab.course`), ``from seqlab.base.bounds import ...``.

A tolerance here is a bound on what rounding can do, never a margin over one machine's measurement: summation
order (AVX2, AVX-512, generic builds), FMA contraction and library versions all change the rounding, and a bound
holds for each of them. References: N. J. Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed.
(SIAM 2002), "Higham" below; N. J. Higham and T. Mary, "A New Approach to Probabilistic Rounding Error Analysis",
SIAM J. Sci. Comput. 41(5), 2019, "Higham & Mary" below.
"""

from __future__ import annotations

import math

import numpy as np

_U = {"float64": 2.0**-53, "float32": 2.0**-24, "bfloat16": 2.0**-8, "float16": 2.0**-11}


def u(dtype) -> float:
    """Unit roundoff of ``dtype`` (numpy or torch dtype, or its name): 2^-53 float64, 2^-24 float32, 2^-8 bfloat16,
    2^-11 float16. fl(x op y) = (x op y)(1 + δ), |δ| <= u (Higham §2.2, the standard model)."""
    name = str(dtype).replace("torch.", "")
    return _U[name if name in _U else np.dtype(dtype).name]


def gamma(n: int, dtype) -> float:
    """γ_n = n·u / (1 − n·u) (Higham §3.1, Lemma 3.1): the relative error bound of n chained roundings."""
    nu = n * u(dtype)
    assert nu < 1, "γ_n needs n·u < 1"
    return nu / (1 - nu)


def dot_bound(n: int, abs_terms_sum, dtype):
    """|fl(x·y) − x·y| <= γ_n · Σ|x_i y_i| for a length-n dot product or sum, in any summation order, with or
    without FMA (Higham §3.1, eq. (3.5)). Two implementations that each satisfy it differ by at most twice this."""
    return gamma(n, dtype) * abs_terms_sum


def matmul_bound(a, b, dtype):
    """Componentwise |fl(AB) − AB| <= γ_k |A||B|, k the inner dimension (Higham §3.5, eq. (3.13)); a and b are
    numpy arrays or torch tensors (float64 copies are taken), the result an array of A@B's shape."""
    a, b = (np.abs(np.asarray(x.detach().double() if hasattr(x, "detach") else x, np.float64)) for x in (a, b))
    return gamma(a.shape[-1], dtype) * (a @ b)


def chain_bound(products: int, n: int, magnitude: float, dtype, gain: float = 1.0) -> float:
    """A network's output computed by ``products`` chained reductions (matrix products, norms, softmax sums) of
    length <= n over terms whose absolute values sum to <= magnitude, each reduction's error passed on to the
    output with a gain <= gain: products · γ_n · magnitude · gain (Higham §3.1 per reduction, eq. (3.5); the
    errors of successive reductions add to first order, Higham §3.3)."""
    return products * gamma(n, dtype) * magnitude * gain


def hoeffding_bound(sum_sq: float, lam: float = 6.0) -> float:
    """λ·√(Σ a_i² b_i²): with independent mean-zero rounding errors r_i, |r_i| <= b_i, the error Σ a_i r_i exceeds
    it with probability at most 2·exp(−λ²/2) (Hoeffding's inequality: Higham & Mary's model of rounding errors
    and their bound λ√n·u in place of the worst case n·u). λ = 6: probability <= 3e-8."""
    return lam * math.sqrt(sum_sq)


def binomial_sd(n: float, p: float) -> float:
    """√(n p (1 − p)): the standard deviation of a count of n independent draws each kept with probability p (a
    sampling bound, not a rounding one: a count within k of these of its expectation, k = 5, fails 6e-7 of runs)."""
    return math.sqrt(n * p * (1 - p))
