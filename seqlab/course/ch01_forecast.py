"""Chapter 1, time series and AR(p), 01.4-01.6: choosing p on a common sample, the one-step and the recursive
forecast (docs/tutorials/01-time-series-ar.md).

The references are :mod:`seqlab.models.autoregressive` (``order_criteria``, ``select_order``, ``AR.fit`` and
``FittedAR``'s forecasts), which give statsmodels' ``AutoReg`` numbers; inputs are float64 tensors, a series oldest
value first, coefficients ``[b, w_1, ..., w_p]`` (the constant first, then the weight of lag 1). The series the cases
draw come from :mod:`seqlab.course.ch01_fit` (01.1-01.3).
"""

from __future__ import annotations

import numpy as np
import torch

from seqlab.course.ch01_fit import SERIES_SIZES, _np, _residual_magnitude, _series
from seqlab.course.exercise import Case, Exercise, Mistake, rounding
from seqlab.models.autoregressive import AR, FittedAR, order_criteria, select_order


def _fitted(params: np.ndarray, last: np.ndarray) -> FittedAR:
    """A FittedAR holding only what forecasting reads (the coefficients and the last p values): seqlab's forecast
    on given coefficients, without a fit."""
    nan = float("nan")
    p = params.shape[0] - 1
    return FittedAR(p=p, params=params, sigma2=nan, nobs=0, llf=nan, aic=nan, bic=nan, hqic=nan, last=last)


# ------------------------------------------------------------------------------------------------------
# 01.4 choosing p: the criteria on a common sample


ORDER_SIZES = [(29, 3), (24, 4), (37, 5)]  # (n, max_p)


def _order_cases() -> list[Case]:
    cases = []
    for seed, (n, max_p) in enumerate(ORDER_SIZES, start=30):
        x = _series(seed, n)
        # the largest p's fit on the common rows bounds every p's residuals (the smaller fits leave larger residuals,
        # but the bound's ratio sum |r| m / SSR is of the same size): 2x for the margin between the p's
        nobs, magnitude = _residual_magnitude(_np(x)[:], max_p, AR(max_p).fit(_np(x)).params)
        cases.append(Case((x, max_p), {"n": n, "max_p": max_p}, seed=seed, n=nobs, magnitude=2 * magnitude))
    return cases


def _order(x, max_p):
    table = order_criteria(_np(x), max_p)
    return torch.tensor([table[p]["aic"] for p in range(1, max_p + 1)], dtype=torch.float64), \
        select_order(_np(x), max_p, "aic")


def _order_own_rows(x, max_p):
    # each p on the rows t = p..n-1: order_criteria up to p itself holds back only p values
    values = torch.tensor([order_criteria(_np(x), p)[p]["aic"] for p in range(1, max_p + 1)], dtype=torch.float64)
    return values, int(values.argmin()) + 1


def _order_constant_counted(x, max_p):
    # FittedAR's own AIC (p + 2 parameters) on the common rows: the series less its first max_p - p values gives
    # AR(p) the targets x_{max_p}, ..., x_{n-1}
    values = torch.tensor([AR(p).fit(_np(x)[max_p - p:]).aic for p in range(1, max_p + 1)], dtype=torch.float64)
    return values, int(values.argmin()) + 1


def _order_largest(x, max_p):
    values, _ = _order(x, max_p)
    return values, int(values.argmax()) + 1


ORDER = Exercise(
    id="01.4",
    name="ar_order_criteria",
    title="Choosing p by AIC on a common sample",
    section="Time series › Autoregressive models (beyond the notes)",
    signature="ar_order_criteria(x, max_p)",
    statement=r"""Score AR($p$), $p = 1, \dots, p_{max}$, by AIC on common rows as `select_order` does, and choose $p$.

As seqlab's `select_order` (and statsmodels' `ar_select_order`) does: `x` is a float64 tensor (n,), oldest value
first; `max_p` an int. Every $p$ is fitted by least squares (exercise
01.2) on **the same rows**, the targets $t = p_{max}, \dots, n-1$ ($N = n - p_{max}$ of them: the first
$p_{max}$ values are held back for every $p$), with the constant. With $\hat\sigma^2 = \mathrm{SSR}/N$ and
$\ell = -\frac{N}{2}(\ln 2\pi\hat\sigma^2 + 1)$, the criterion counts $p + 1$ parameters (the $p$ weights and
$\sigma^2$, not $b$): $\mathrm{AIC}(p) = -2\ell + 2(p + 1)$.

Return `(aic, p_hat)`: `aic` a float64 tensor (max_p,), `aic[p - 1]` the value of AR($p$), and `p_hat` the int $p$
with the smallest value (ties: the smaller $p$).""",
    reference=_order,
    cases=_order_cases,
    mistakes=(
        Mistake("rows-not-common", "you fitted each p on its own rows, t = p .. n - 1; the criteria compare like "
                "with like only on the same rows, t = max_p .. n - 1 for every p (the first max_p = {max_p} values "
                "held back) (Time series › Autoregressive models).", _order_own_rows),
        Mistake("constant-counted", "your values are 2 higher: you count p + 2 parameters (b too), as a fit's own "
                "AIC does; select_order counts p + 1, as statsmodels' ar_select_order (the chosen p is the same) "
                "(Time series › Autoregressive models, departure).", _order_constant_counted),
        Mistake("largest-chosen", "your p_hat has the largest criterion; the best p is the one with the "
                "smallest (Time series › Autoregressive models).", _order_largest),
    ),
    # per p, the fit's residuals and SSR as in 01.3 (the fit's own error enters SSR only to second order at the
    # least-squares optimum); the chosen p is an int, compared exactly
    tolerance=rounding(products=2),
    follows="seqlab's select_order values: the tutorial's AIC = -2 llf + 2 (k + 1), k = p + 1, counts p + 2 "
            "parameters, as a fit's own aic (exercise 01.3) does; select_order, as statsmodels, counts p + 1, so "
            "every value sits 2 lower and the chosen p is the same. The exercise checks select_order's values.",
)

# ------------------------------------------------------------------------------------------------------
# 01.5 the one-step forecast


def _fitted_case(seed: int, n: int, p: int) -> tuple[torch.Tensor, torch.Tensor]:
    x = _series(seed, n)
    return torch.from_numpy(AR(p).fit(_np(x)).params.copy()), x


def _one_step_cases() -> list[Case]:
    cases = []
    for seed, (n, p) in enumerate(SERIES_SIZES, start=40):
        params, x = _fitted_case(seed, n, p)
        terms = abs(params[0].item()) + (params[1:].abs() @ x[-p:].flip(0).abs()).item()
        cases.append(Case((params, x), {"n": n, "p": p}, seed=seed, n=p + 1, magnitude=terms))
    return cases


def _one_step(params, x):
    p = params.shape[0] - 1
    return float(_fitted(_np(params), _np(x)[-p:]).forecast(1)[0])


def _one_step_reversed(params, x):
    return _one_step(torch.cat([params[:1], params[1:].flip(0)]), x)


def _one_step_early(params, x):
    return _one_step(params, x[:-1])  # the window ends at x_{n-2}: the in-sample prediction of x_{n-1}


def _one_step_no_constant(params, x):
    return _one_step(torch.cat([params.new_zeros(1), params[1:]]), x)


ONE_STEP = Exercise(
    id="01.5",
    name="ar_one_step_forecast",
    title="The one-step forecast",
    section="Time series › Autoregressive models",
    signature="ar_one_step_forecast(params, x)",
    statement=r"""Forecast the value after the series: $\hat x_n = b + \sum_{i=1}^{p} w_i\, x_{n-i}$.

`params` is a float64 tensor (p + 1,), $\theta = [b, w_1, \dots, w_p]$ (the constant, then the weight of lag 1,
lag 2, ...); `x` a float64 tensor (n,) of observed values $x_0, \dots, x_{n-1}$, oldest first, n > p. Return
$\hat x_n$ as a float (or a 0-d tensor).""",
    reference=_one_step,
    cases=_one_step_cases,
    mistakes=(
        Mistake("weights-reversed", "your weights meet the window in the other order: w_1 goes with the newest "
                "value x_(n-1), w_{p} with x_(n-{p}) (x_t = b + sum_i w_i x_(t-i)) (Time series › "
                "Autoregressive models).", _one_step_reversed),
        Mistake("window-one-step-early", "your window ends one value early, at x_(n-2): that predicts x_(n-1), "
                "which is already observed; the forecast of x_n reads x_(n-1), ..., x_(n-p) (Time series › "
                "Autoregressive models).", _one_step_early),
        Mistake("constant-dropped", "your forecast leaves out the constant b = params[0]; x_t = b + sum_i w_i "
                "x_(t-i) (Time series › Autoregressive models).", _one_step_no_constant),
    ),
    tolerance=rounding(products=1),  # one dot product of p + 1 terms
)

# ------------------------------------------------------------------------------------------------------
# 01.6 the recursive forecast


FORECAST_SIZES = [(21, 2, 6), (27, 3, 5), (18, 4, 7)]  # (n, p, steps)


def _forecast_cases() -> list[Case]:
    cases = []
    for seed, (n, p, steps) in enumerate(FORECAST_SIZES, start=50):
        params, x = _fitted_case(seed, n, p)
        path = _forecast(params, x, steps)
        values = torch.cat([x[-p:], path]).abs().max().item()
        gain = max(1.0, params[1:].abs().sum().item())
        # each step: |b| + sum |w_i v_i| <= |b| + sum|w| max|v|; its error and the earlier steps' (passed on with
        # gain sum |w| each step) add up: the case's magnitude takes gain^steps for the compounding
        magnitude = (abs(params[0].item()) + params[1:].abs().sum().item() * values) * gain ** steps
        cases.append(Case((params, x, steps), {"n": n, "p": p, "steps": steps}, seed=seed, n=p + 1,
                          magnitude=magnitude))
    return cases


def _forecast(params, x, steps):
    p = params.shape[0] - 1
    return torch.from_numpy(_fitted(_np(params), _np(x)[-p:]).forecast(steps))


def _forecast_not_fed_back(params, x, steps):
    return _forecast(params, x, 1).repeat(steps)  # every step from the observed window: the one-step forecast


def _forecast_reversed(params, x, steps):
    return _forecast(torch.cat([params[:1], params[1:].flip(0)]), x, steps)


def _forecast_one_late(params, x, steps):
    return _forecast(params, x, steps + 1)[1:]  # x_{n+1}, ..., x_{n+steps}


def _per_step(case: Case, dtype) -> float:
    """One dot product of p + 1 terms per step, ``steps`` of them chained (the compounding in the magnitude)."""
    return rounding(products=case.sizes["steps"])(case, dtype)


FORECAST = Exercise(
    id="01.6",
    name="ar_forecast",
    title="The recursive multi-step forecast",
    section="Time series › Forecasting",
    signature="ar_forecast(params, x, steps)",
    statement=r"""Forecast `steps` values recursively: $\hat x_{n+h} = b + \sum_{i=1}^{p} w_i\,\tilde x_{n+h-i}$.

Each forecast is fed back as the input of the next. `params` is a float64 tensor (p + 1,), $\theta = [b, w_1,
\dots, w_p]$; `x` a float64 tensor (n,) of observed values, oldest first; `steps` an int. $\tilde x_s$ is the
observed $x_s$ for $s < n$ and the earlier forecast $\hat x_s$ for $s \ge n$. Return $[\hat x_n, \hat x_{n+1},
\dots, \hat x_{n+\mathrm{steps}-1}]$, a float64 tensor (steps,).""",
    reference=_forecast,
    cases=_forecast_cases,
    mistakes=(
        Mistake("not-fed-back", "every one of your {steps} forecasts is the one-step forecast: the window never "
                "moves; after each step, the forecast becomes the newest value of the window (v_(T+h-1) is the "
                "earlier forecast) (Time series › Forecasting).", _forecast_not_fed_back),
        Mistake("weights-reversed", "your weights meet the window in the other order: w_1 goes with the newest "
                "value (observed or forecast), w_{p} with the oldest (Time series › Forecasting).",
                _forecast_reversed),
        Mistake("one-step-late", "your forecasts start one step late, at x_(n+1); the first is x_n, the value "
                "right after the series (Time series › Forecasting).", _forecast_one_late),
    ),
    tolerance=_per_step,
)

EXERCISES: tuple[Exercise, ...] = (ORDER, ONE_STEP, FORECAST)
