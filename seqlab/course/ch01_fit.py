"""Chapter 1, time series and AR(p), 01.1-01.3: the window matrix, the least-squares fit, its noise variance,
log-likelihood and information criteria (docs/tutorials/01-time-series-ar.md).

The references are :mod:`seqlab.models.autoregressive` (``design_matrix``, ``AR.fit``, ``FittedAR`` and the
likelihood and criteria it computes), which give statsmodels' ``AutoReg`` numbers; inputs are float64 tensors, a
series oldest value first, coefficients ``[b, w_1, ..., w_p]`` (the constant first, then the weight of lag 1). The
series the cases draw and the tolerance of values computed from the residuals live here;
:mod:`seqlab.course.ch01_forecast` (01.4-01.6) uses them too.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from seqlab.course.exercise import Case, Exercise, Mistake, generator, randn, rounding
from seqlab.models.autoregressive import AR, FittedAR, _criteria, _llf, design_matrix

SERIES_SIZES = [(23, 2), (31, 3), (19, 4)]  # (n, p) of the three cases: p >= 2, so that reversing the lags shows


def _series(seed: int, n: int) -> torch.Tensor:
    """(n,) float64: an AR(2) process with a constant, its coefficients drawn with the case's seed (stationary:
    |w_1| + |w_2| < 1), so that every fit and forecast is of a series AR(p) describes."""
    g = generator(seed)
    b, w1, w2 = 1.0 + torch.rand(1, generator=g).item(), 0.3 + 0.4 * torch.rand(1, generator=g).item(), -0.25
    noise = randn(g, n + 10)
    x = [0.0, 0.0]
    for e in noise.tolist():  # 10 values of burn-in are dropped
        x.append(b + w1 * x[-1] + w2 * x[-2] + e)
    return torch.tensor(x[-n:], dtype=torch.float64)


def _np(x: torch.Tensor) -> np.ndarray:
    return x.detach().numpy().astype(np.float64)


def _residual_magnitude(x: np.ndarray, p: int, params: np.ndarray) -> tuple[int, float]:
    """(n, magnitude) for the tolerance of values computed from the residual sum of squares SSR: each residual
    Y_t - X_t theta carries at most gamma_{p+2} m_t, m_t = |Y_t| + sum_j |X_tj theta_j| (Higham 3.5), so SSR at most
    gamma_n (2 sum_t |r_t| m_t + SSR); the log-likelihood -(nobs/2) ln(SSR/nobs) passes on nobs/2 times SSR's
    relative error, and the criteria -2 llf twice that: magnitude = nobs (2 sum |r| m + SSR) / SSR, n = nobs."""
    X, Y = design_matrix(x, p)
    r = Y - X @ params
    m = np.abs(Y) + np.abs(X) @ np.abs(params)
    ssr = float(r @ r)
    return Y.shape[0], Y.shape[0] * (2 * float(np.abs(r) @ m) + ssr) / ssr


# ------------------------------------------------------------------------------------------------------
# 01.1 the window (design) matrix


def _design_cases() -> list[Case]:
    return [Case((_series(seed, n), p), {"n": n, "p": p}, seed=seed) for seed, (n, p) in enumerate(SERIES_SIZES)]


def _design(x, p):
    X, Y = design_matrix(_np(x), p)
    return torch.from_numpy(X.copy()), torch.from_numpy(Y.copy())


def _design_oldest_first(x, p):
    X, Y = _design(x, p)
    return torch.cat([X[:, :1], X[:, 1:].flip(1)], dim=1), Y  # [1, x_{t-p}, ..., x_{t-1}]


def _design_constant_last(x, p):
    X, Y = _design(x, p)
    return torch.cat([X[:, 1:], X[:, :1]], dim=1), Y


def _design_no_constant(x, p):
    X, Y = _design(x, p)
    return X[:, 1:], Y


def _design_with_target(x, p):
    # seqlab's rows one step later, [1, x_t, ..., x_{t-p+1}]: the window of the series with one more value, less
    # its first row
    X, _ = _design(torch.cat([x, x.new_zeros(1)]), p)
    return X[1:], _design(x, p)[1]


DESIGN = Exercise(
    id="01.1",
    name="ar_design_matrix",
    title="The window matrix of AR(p)",
    section="Time series › Sliding windows",
    signature="ar_design_matrix(x, p)",
    statement=r"""The regression table of AR($p$): rows $X_t = [1, x_{t-1}, \dots, x_{t-p}]$, targets $Y_t = x_t$.

`x` is a float64 tensor (n,), oldest value first; `p` an int. Return `(X, Y)`: `X` of shape (n - p, p + 1), one row
per target $t = p, \dots, n-1$, holding a 1 (for the constant $b$) and then the $p$ values before $t$, **newest
first**; `Y` of shape (n - p,), the targets $x_p, \dots, x_{n-1}$. With that column order,
$X_t \theta = b + \sum_i w_i x_{t-i}$ for $\theta = [b, w_1, \dots, w_p]$.""",
    reference=_design,
    cases=_design_cases,
    mistakes=(
        Mistake("columns-reversed", "your lag columns are in the other order, oldest first ([1, x_(t-{p}), ..., "
                "x_(t-1)]); the row is [1, x_(t-1), ..., x_(t-p)], newest first, so that column i + 1 meets w_i in "
                "x_t = b + sum_i w_i x_(t-i) (Time series › Sliding windows).", _design_oldest_first),
        Mistake("constant-last", "your column of ones is last; it comes first, [1, x_(t-1), ..., x_(t-p)], so "
                "that theta = [b, w_1, ..., w_p] (Time series › Sliding windows).", _design_constant_last),
        Mistake("no-constant", "X has no column of ones, so the fit could not have the constant b of "
                "x_t = b + sum_i w_i x_(t-i); put a 1 first in every row (Time series › Sliding windows).",
                _design_no_constant),
        Mistake("window-includes-target", lambda case: (
            f"each row holds x_t itself ([1, x_t, ..., x_(t-{case.sizes['p'] - 1})]): the window is one step late, "
            f"so the target leaks into its own inputs; row t holds the p = {case.sizes['p']} values before t "
            "(Time series › Sliding windows)."), _design_with_target),
    ),
    # copies of the series' values: nothing is rounded
    follows="seqlab's row order: the notes' slide writes each window oldest first (t_0 t_1 t_2 -> t_3) and "
            "without the constant; seqlab, as statsmodels, reads it newest first with a 1 for b, so that the "
            "coefficients come out as [b, w_1, ..., w_p]. The exercise checks seqlab's.",
)

# ------------------------------------------------------------------------------------------------------
# 01.2 the least-squares fit


def _fit_cases() -> list[Case]:
    cases = []
    for seed, (n, p) in enumerate(SERIES_SIZES, start=10):
        x = _series(seed, n)
        X, Y = design_matrix(_np(x), p)
        s = np.linalg.svd(X, compute_uv=False)
        theta = np.linalg.pinv(X) @ Y
        # a least-squares solution moves by at most ~ kappa^2 u (|theta| + |Y| / sigma_min) when X and Y are
        # rounded (Higham, Accuracy and Stability, ch. 20: the kappa^2 term; the normal equations reach it too)
        magnitude = (s[0] / s[-1]) ** 2 * (np.linalg.norm(theta) + np.linalg.norm(Y) / s[-1])
        cases.append(Case((x, p), {"n": n, "p": p}, seed=seed, n=Y.shape[0], magnitude=float(magnitude)))
    return cases


def _fit(x, p):
    return torch.from_numpy(AR(p).fit(_np(x)).params.copy())


def _fit_oldest_first(x, p):
    theta = _fit(x, p)
    return torch.cat([theta[:1], theta[1:].flip(0)])  # [b, w_p, ..., w_1]


def _fit_constant_last(x, p):
    theta = _fit(x, p)
    return torch.cat([theta[1:], theta[:1]])  # [w_1, ..., w_p, b]


def _fit_no_constant(x, p):
    # seqlab fits only with the constant (ARConfig.trend = "c"): its window matrix less the ones column, solved as
    # AR.fit solves, by the pseudo-inverse
    X, Y = design_matrix(_np(x), p)
    return torch.from_numpy(np.linalg.pinv(X[:, 1:]) @ Y)


def _fit_mean_as_constant(x, p):
    # the series centred on its mean, fitted without a constant (as above), and the mean reported as b
    mean = float(_np(x).mean())
    X, Y = design_matrix(_np(x) - mean, p)
    return torch.from_numpy(np.concatenate([[mean], np.linalg.pinv(X[:, 1:]) @ Y]))


FIT = Exercise(
    id="01.2",
    name="ar_fit",
    title="The least-squares fit of AR(p)",
    section="Time series › Least-squares fit (beyond the notes)",
    signature="ar_fit(x, p)",
    statement=r"""Fit AR($p$) by least squares: $\hat\theta = \arg\min_\theta \lVert Y - X\theta\rVert^2 = X^{+} Y$.

`x` is a float64 tensor (n,), oldest value first; `p` an int. Build the window matrix of exercise 01.1 (rows
$[1, x_{t-1}, \dots, x_{t-p}]$, targets $x_t$, $t = p, \dots, n-1$) and return $\hat\theta = [b, w_1, \dots,
w_p]$, a float64 tensor (p + 1,): the constant first, then the weight of lag 1, lag 2, ... Any least-squares
solver will do (`torch.linalg.lstsq`, the pseudo-inverse, the normal equations). The constant $b$ is the
intercept of the regression, not the series' mean.""",
    reference=_fit,
    cases=_fit_cases,
    mistakes=(
        Mistake("columns-reversed", "your weights are in the other order, [b, w_{p}, ..., w_1]: the window "
                "matrix's lag columns were oldest first; with rows [1, x_(t-1), ..., x_(t-p)] the coefficient "
                "after b is w_1, the weight of yesterday (Time series › Sliding windows).", _fit_oldest_first),
        Mistake("constant-last", "your constant b is last, [w_1, ..., w_p, b]; theta = [b, w_1, ..., w_p] has it "
                "first, as the 1 is the first column of each row (Time series › Sliding windows).",
                _fit_constant_last),
        Mistake("no-constant", "you fitted without the constant b (no column of ones), so you return {p} "
                "weights and they absorb the series' level; AR(p) is x_t = b + sum_i w_i x_(t-i) (Time series › "
                "Autoregressive models).", _fit_no_constant),
        Mistake("mean-as-constant", "you centred the series on its mean, fitted the weights without a constant and "
                "gave the mean as b; b is the regression's intercept, b = mu (1 - sum_i w_i) for the long-run mean "
                "mu, fitted with the weights: a column of ones in X (Time series › Least-squares fit).",
                _fit_mean_as_constant),
    ),
    # three chained steps of length <= nobs (X^T X or a QR of X, X^T Y, the solve), magnitude the least-squares
    # perturbation kappa(X)^2 (|theta| + |Y| / sigma_min(X)) of the case
    tolerance=rounding(products=3),
)

# ------------------------------------------------------------------------------------------------------
# 01.3 noise variance, log-likelihood and the information criteria


def _likelihood_cases() -> list[Case]:
    cases = []
    for seed, (n, p) in enumerate(SERIES_SIZES, start=20):
        x = _series(seed, n)
        params = AR(p).fit(_np(x)).params  # the least-squares coefficients, then rounded off their optimum below
        params = params + 0.01 * np.linspace(1.0, -1.0, p + 1)  # (not at the optimum: SSR is not insensitive)
        nobs, magnitude = _residual_magnitude(_np(x), p, params)
        cases.append(Case((x, torch.from_numpy(params)), {"n": n, "p": p}, seed=seed, n=max(nobs, p + 2),
                          magnitude=magnitude))
    return cases


def _statistics(fitted: FittedAR) -> dict[str, float]:
    return {"sigma2": fitted.sigma2, "llf": fitted.llf, "aic": fitted.aic, "bic": fitted.bic, "hqic": fitted.hqic}


def _likelihood(x, params):
    return _statistics(FittedAR.from_params(_np(x), params.shape[0] - 1, _np(params)))


def _ssr(x, params) -> tuple[float, int, int]:
    """seqlab's SSR, nobs and p for ``params`` on ``x`` (from FittedAR.from_params: sigma2 * nobs)."""
    fitted = FittedAR.from_params(_np(x), params.shape[0] - 1, _np(params))
    return fitted.sigma2 * fitted.nobs, fitted.nobs, fitted.p


def _with(sigma2: float, llf: float, nobs: int, n_params: int) -> dict[str, float]:
    """The five statistics from a variance and a log-likelihood, the criteria by seqlab's _criteria."""
    return {"sigma2": sigma2, "llf": llf, **_criteria(llf, nobs, n_params)}


def _likelihood_unbiased(x, params):
    ssr, nobs, p = _ssr(x, params)
    k = p + 1
    # the log-likelihood at sigma2 = SSR / (nobs - k): seqlab's _llf of the SSR that gives it over nobs
    return _with(ssr / (nobs - k), float(_llf(ssr * nobs / (nobs - k), nobs)), nobs, k + 1)


def _likelihood_series_length(x, params):
    ssr, nobs, p = _ssr(x, params)
    n = x.shape[0]  # every "n" the series' length, p more than the rows
    return _with(ssr / n, float(_llf(ssr, n)), n, p + 2)


def _likelihood_one_short(x, params):
    stats = _likelihood(x, params)
    _, nobs, p = _ssr(x, params)
    return _with(stats["sigma2"], stats["llf"], nobs, p + 1)


def _likelihood_constants_dropped(x, params):
    stats = _likelihood(x, params)
    _, nobs, p = _ssr(x, params)
    llf = -(nobs / 2) * math.log(stats["sigma2"])  # without ln(2 pi) + 1
    return _with(stats["sigma2"], llf, nobs, p + 2)


LIKELIHOOD = Exercise(
    id="01.3",
    name="ar_fit_statistics",
    title="Noise variance, log-likelihood and information criteria of a fit",
    section="Time series › Least-squares fit (beyond the notes)",
    signature="ar_fit_statistics(x, params)",
    statement=r"""Compute what a fit of AR($p$) reports: $\hat\sigma^2$, the log-likelihood $\ell$ and AIC, BIC, HQIC.

`x` is a float64 tensor (n,), oldest value first; `params` a float64 tensor (p + 1,), $\theta = [b, w_1, \dots,
w_p]$ (so $p$ = `len(params) - 1`). With the window matrix of exercise 01.1 ($N = n - p$ rows, $t = p, \dots,
n-1$), $\mathrm{SSR} = \sum_t (x_t - X_t\theta)^2$ and $k = p + 1$ coefficients:

$$\hat\sigma^2 = \frac{\mathrm{SSR}}{N}, \quad \ell = -\frac{N}{2}\bigl(\ln 2\pi + \ln\hat\sigma^2 + 1\bigr),$$

$$\mathrm{AIC} = -2\ell + 2(k+1), \quad \mathrm{BIC} = -2\ell + (k+1)\ln N, \quad
\mathrm{HQIC} = -2\ell + 2(k+1)\ln\ln N.$$

Return a dict with the keys `"sigma2"`, `"llf"`, `"aic"`, `"bic"`, `"hqic"` (floats). The cases' `params` are near
the least-squares fit but not at it.""",
    reference=_likelihood,
    cases=_likelihood_cases,
    mistakes=(
        Mistake("variance-over-n-minus-k", lambda case: (
            f"your sigma2 divides SSR by N - k = {case.sizes['n'] - 2 * case.sizes['p'] - 1}, the unbiased "
            f"estimate; seqlab's (and statsmodels') is the conditional maximum-likelihood one, SSR / N with N = "
            f"{case.sizes['n'] - case.sizes['p']}, and the log-likelihood uses it (Time series › Least-squares "
            "fit)."), _likelihood_unbiased),
        Mistake("series-length-for-n", "you used the series' length n = {n} where the formulas take the number of "
                "rows N = n - p, the targets the fit has (in sigma2, the log-likelihood and ln N) (Time series › "
                "Least-squares fit).", _likelihood_series_length),
        Mistake("one-parameter-short", "your criteria count k = p + 1 parameters; a fit's criteria count "
                "k + 1 = p + 2: the constant b, the p = {p} weights and sigma2 (AIC = -2 llf + 2 (k + 1)) "
                "(Time series › Least-squares fit).", _likelihood_one_short),
        Mistake("llf-constants-dropped", "your log-likelihood is -(N/2) ln sigma2 only; the Gaussian "
                "log-likelihood at the MLE variance is -(N/2)(ln 2 pi + ln sigma2 + 1) (Time series › "
                "Least-squares fit).", _likelihood_constants_dropped),
    ),
    # the residuals (p + 2 terms each) and their sum of squares (N terms): two reductions; the magnitude carries
    # the log's and the criteria's gain on SSR's relative error (_residual_magnitude)
    tolerance=rounding(products=2),
)

EXERCISES: tuple[Exercise, ...] = (DESIGN, FIT, LIKELIHOOD)
