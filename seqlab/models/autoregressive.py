"""AR(p), the autoregressive model of the notes (Time series › Autoregressive models), fitted exactly as
statsmodels' ``AutoReg(trend="c")``.

The notes' time-series chapter opens with a table of daily temperatures and asks "how much to go back?".
Taking only the past two days gives

    t_5 = b + w_1 t_4 + w_2 t_3                                  (the notes' p = 2 example)

and fixing ``p`` in general gives

    AR(p):  x_t = b + sum_{i=1..p} w_i x_{t-i}                   (the notes' AR(p))

The notes then slide a window over the series: each row of X holds p consecutive values and Y the
value that follows (X rows ``t_0 t_1 t_2``, ``t_1 t_2 t_3``, ...; Y ``t_3``, ``t_4``, ...). That is
the design matrix here, with a column of ones for ``b`` and the window read newest-first, the order
statsmodels uses (ThetaDesign: params are ``[const, lag 1, ..., lag p]`` = ``[b, w_1, ..., w_p]``):

    row t = [1, x_{t-1}, x_{t-2}, ..., x_{t-p}],  target x_t,  for t = p .. n-1

The coefficients minimise the squared one-step error sum_t (x_t - row_t . theta)^2, solved in closed
form with the Moore-Penrose pseudo-inverse, ``theta = pinv(X) @ Y`` (statsmodels' OLS default, and
bit-for-bit the same numbers: specs/metrics.md section 3.2). ``AR.fit_gradient`` is the neural view of
the same model: a linear layer ``x_t = b + w . window`` trained by gradient descent on the same squared
error, converging to the same coefficients.

Derived quantities follow specs/metrics.md section 3.3 (n = nobs = number of rows, k = p + 1):

    sigma2 = (1/n) sum resid^2               (conditional MLE: divided by n, not n - k)
    llf    = -(n/2) (ln(2 pi) + ln(ssr/n) + 1)
    aic    = -2 llf + 2 (k+1),  bic = -2 llf + ln(n) (k+1),  hqic = -2 llf + 2 ln(ln n) (k+1)

Forecasts are recursive (section 3.4): step h uses the row [1, v_{T+h-1}, ..., v_{T+h-p}] where v is
the observed series and then the earlier forecasts. Order selection (``select_order``) fits p = 1..max_p
on a common sample (the first max_p values held back for every p), as ``ar_select_order`` does.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from seqlab.base.errors import SeqlabError
from seqlab.base.io import read_json, write_json_atomic

FORMAT_VERSION = 1  # of the JSON written by FittedAR.save
CRITERIA = ("aic", "bic", "hqic")


@dataclass(frozen=True)
class ARConfig:
    """Hyperparameters of AR(p) (docs/manual.md, "Config conventions": `model.p`, `model.max_p`)."""

    p: int = 2  # number of lags: x_t depends on x_{t-1} .. x_{t-p}
    max_p: int = 0  # 0: use `p` as given; >= 1: choose p in 1..max_p by `ic` (select_order) at fit time
    ic: str = "aic"  # information criterion for order selection: "aic", "bic" or "hqic"
    trend: str = "c"  # deterministic term: "c" = the constant b of the notes (the only one supported)

    def __post_init__(self) -> None:
        _check_order(self.p, "model.p")
        if isinstance(self.max_p, bool) or not isinstance(self.max_p, int) or self.max_p < 0:
            raise SeqlabError(f"model.max_p must be an integer >= 0, got {self.max_p!r}; use 0 to keep model.p")
        if self.ic not in CRITERIA:
            raise SeqlabError(f"model.ic must be one of {', '.join(CRITERIA)}, got {self.ic!r}; pick one of them")
        if self.trend != "c":
            raise SeqlabError(f"model.trend {self.trend!r} is not supported; use \"c\" (a constant term)")

    def unused_keys(self) -> dict[str, str]:
        """The keys this combination leaves unused, each with why and the fix (a user who sets one is told:
        seqlab.tasks.registry.resolve_run): ``p`` while ``max_p`` chooses it, ``ic`` while ``max_p = 0``."""
        if self.max_p:
            return {"p": f"while model.max_p = {self.max_p} chooses p by model.ic; also set model.max_p=0 to fit "
                         f"AR({self.p})"}
        return {"ic": f"while model.max_p = 0 keeps model.p = {self.p}; set model.max_p >= 1 to choose p by "
                      "model.ic, or remove model.ic"}


def _check_order(p: Any, name: str = "p") -> int:
    if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or p < 1:
        raise SeqlabError(f"{name} must be an integer >= 1 (the number of lags), got {p!r}; use p = 1 or more")
    return int(p)


def min_length(p: int) -> int:
    """The shortest series AR(p) accepts: nobs = n - p rows must outnumber the p + 1 coefficients."""
    return 2 * p + 2


def as_series(series: Any, p: int) -> np.ndarray:
    """Validate a univariate series for AR(p) and return it as a float64 array of shape (n,)."""
    try:
        x = np.asarray(series, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise SeqlabError(f"the series must be numbers ({exc}); pass a 1-D list or array of floats") from None
    if x.ndim == 2 and 1 in x.shape:  # a single row or column
        x = x.reshape(-1)
    if x.ndim != 1:
        raise SeqlabError(f"the series must be 1-D, got shape {x.shape}; pass one column of values")
    bad = np.flatnonzero(~np.isfinite(x))
    if bad.size:
        raise SeqlabError(
            f"the series has {bad.size} NaN/infinite value(s), the first at position {bad[0]}; "
            "remove or fill them before fitting"
        )
    need = min_length(p)
    if x.size < need:
        raise SeqlabError(
            f"the series has {x.size} values but AR({p}) needs at least {need} (2p + 2); "
            "use a longer series or a smaller p"
        )
    if np.ptp(x) == 0.0:
        raise SeqlabError(f"the series is constant (every value is {x[0]!r}); AR(p) needs a series that varies")
    return x


def design_matrix(x: np.ndarray, p: int, hold_back: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    r"""The window matrix of the notes (Time series › Sliding windows): rows [1, x_{t-1}, ..., x_{t-p}] and
    targets x_t, t = hold_back..n-1.

    ``hold_back`` (default p, at least p) is the number of leading values that are never targets;
    order selection sets it to max_p so every candidate p is fitted on the same rows.

    !!! equation "Time series › Sliding windows"
        $X_t = [1, x_{t-1}, \dots, x_{t-p}],\ Y_t = x_t$: the series as a regression table, one row per target,
        holding the $p$ values before it (newest first) and a 1 for the constant $b$.

    !!! departure "Time series › Sliding windows (notation)"
        notes: the window's rows hold the $p$ values in the series' order, oldest first (rows $t_0\ t_1\ t_2$,
        $t_1\ t_2\ t_3$, ...; targets $t_3$, $t_4$, ...).
        seqlab: newest first, $[1, x_{t-1}, \dots, x_{t-p}]$ with the column of ones first (statsmodels' order,
        so coefficient $w_i$ is lag $i$'s, as in the notes' $t_6 = b + w_1 t_5 + w_2 t_4$): the same rows with
        their columns reversed, the same fit.
    """
    n = x.shape[0]
    h = p if hold_back is None else hold_back
    # each lag column j is the series shifted by j: x[h-j : n-j]
    X = np.column_stack([np.ones(n - h)] + [x[h - j : n - j] for j in range(1, p + 1)])  # (nobs, 1 + p)
    Y = x[h:]  # (nobs,)
    return X, Y


def _llf(ssr: float, nobs: int) -> float:
    """Gaussian log-likelihood at the MLE variance ssr/nobs (specs/metrics.md 3.3)."""
    return -(nobs / 2) * (np.log(2 * np.pi) + np.log(ssr / nobs) + 1)


def _criteria(llf: float, nobs: int, n_params: int) -> dict[str, float]:
    """AIC, BIC and HQIC counting `n_params` free parameters (statsmodels eval_measures)."""
    return {
        "aic": -2.0 * llf + 2.0 * n_params,
        "bic": -2.0 * llf + np.log(nobs) * n_params,
        "hqic": -2.0 * llf + 2 * np.log(np.log(nobs)) * n_params,
    }


def _one_step(row: np.ndarray, params: np.ndarray) -> float:
    """x_t = b + sum_i w_i x_{t-i} as one (1, k) @ (k,) product, the operation statsmodels uses."""
    return float((row[None, :] @ params)[0])  # (1, k) @ (k,) -> (1,)


@dataclass(frozen=True, eq=False)
class FittedAR:
    """A fitted AR(p): coefficients, noise variance, information criteria and the last p values."""

    p: int  # number of lags
    params: np.ndarray  # (1 + p,): [b, w_1, ..., w_p], constant first as statsmodels orders them
    sigma2: float  # (1/nobs) * sum of squared residuals
    nobs: int  # rows of the window matrix the fit used (n - p)
    llf: float  # Gaussian log-likelihood at sigma2
    aic: float
    bic: float
    hqic: float
    last: np.ndarray  # (p,): the final p observed values, oldest first, where forecasts start
    fittedvalues: np.ndarray | None = None  # (nobs,): one-step in-sample predictions; None once loaded
    resid: np.ndarray | None = None  # (nobs,): x_t - fittedvalues; None once loaded

    @classmethod
    def from_params(cls, x: np.ndarray, p: int, params: np.ndarray) -> "FittedAR":
        """Residuals, sigma2, likelihood and criteria of `params` on the series `x` (validated)."""
        X, Y = design_matrix(x, p)
        fitted = X @ params  # (nobs, 1 + p) @ (1 + p,) -> (nobs,)
        resid = Y - fitted
        nobs = Y.shape[0]
        ssr = resid @ resid
        if ssr == 0.0:
            raise SeqlabError(
                f"AR({p}) reproduces the series exactly (zero residuals), so sigma2 and the criteria are "
                "undefined; use a smaller p or a series with noise"
            )
        sigma2 = (1.0 / nobs) * np.sum(resid**2)
        llf = _llf(ssr, nobs)
        ics = _criteria(llf, nobs, X.shape[1] + 1)  # k coefficients + sigma2
        return cls(
            p=p, params=params, sigma2=float(sigma2), nobs=nobs, llf=float(llf),
            aic=float(ics["aic"]), bic=float(ics["bic"]), hqic=float(ics["hqic"]),
            last=x[-p:].copy(), fittedvalues=fitted, resid=resid,
        )

    @property
    def const(self) -> float:
        """b, the constant of x_t = b + sum_i w_i x_{t-i}."""
        return float(self.params[0])

    @property
    def coefs(self) -> np.ndarray:
        """(p,): w_1 .. w_p, the weight of lag 1 first."""
        return self.params[1:]

    def forecast(self, steps: int = 1) -> np.ndarray:
        r"""Recursive h-step forecasts x_n, x_{n+1}, ..., x_{n+steps-1}; returns shape (steps,).

        !!! equation "Time series › Forecasting"
            $\hat{x}_{T+h} = b + \sum_{i=1}^{p} w_i v_{T+h-i}$: the forecast $h$ steps ahead, $v$ the observed
            values and then the earlier forecasts (as the notes' $t_6 = b + w_1 t_5 + w_2 t_4$)."""
        if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
            raise SeqlabError(f"steps must be an integer >= 1, got {steps!r}; ask for 1 or more forecasts")
        history = list(self.last)  # observed values, then each forecast appended
        out = np.empty(int(steps))
        row = np.ones(1 + self.p)
        for h in range(int(steps)):
            row[1:] = history[: -self.p - 1 : -1]  # [v_{t-1}, ..., v_{t-p}], newest first
            out[h] = _one_step(row, self.params)
            history.append(out[h])
        return out

    def predict(self, series: Any = None) -> np.ndarray:
        """One-step-ahead predictions x_hat_t for t = p..n-1, shape (n - p,).

        Without an argument, the in-sample predictions on the training series (statsmodels'
        ``fittedvalues``); with a series, the same predictions on that series.
        """
        if series is None:
            if self.fittedvalues is None:
                raise SeqlabError("a loaded AR model keeps no training series; pass the series to predict(series)")
            return self.fittedvalues
        X, _ = design_matrix(as_series(series, self.p), self.p)
        return X @ self.params  # (nobs, 1 + p) @ (1 + p,) -> (nobs,)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format_version": FORMAT_VERSION,
            "model": "ar",
            "p": self.p,
            "params": self.params.tolist(),
            "sigma2": self.sigma2,
            "nobs": self.nobs,
            "llf": self.llf,
            "aic": self.aic,
            "bic": self.bic,
            "hqic": self.hqic,
            "last": self.last.tolist(),
        }

    def save(self, path: str | os.PathLike) -> Path:
        """Write the model as JSON (floats round-trip exactly), atomically: temp file, then rename."""
        return write_json_atomic(path, self.to_dict(), indent=1)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "FittedAR":
        """Read a model written by :meth:`save`; forecasts continue from the saved last p values."""
        d = read_json(path, "AR model", "pass a file FittedAR.save wrote")
        if not isinstance(d, dict) or d.get("model") != "ar":
            raise SeqlabError(f"{path}: not an AR model file (no \"model\": \"ar\"); pass a file FittedAR.save wrote")
        if d.get("format_version") != FORMAT_VERSION:
            raise SeqlabError(
                f"{path}: AR model format_version {d.get('format_version')!r} is not known "
                f"(this seqlab reads {FORMAT_VERSION}); refit the model with this version"
            )
        try:
            p = _check_order(d["p"])
            params = np.asarray(d["params"], dtype=np.float64)
            last = np.asarray(d["last"], dtype=np.float64)
            fields = {k: float(d[k]) for k in ("sigma2", "llf", "aic", "bic", "hqic")}
            nobs = int(d["nobs"])
        except (KeyError, TypeError, ValueError) as exc:
            raise SeqlabError(f"{path}: AR model JSON is missing or has a bad field ({exc}); save it again") from None
        if params.shape != (p + 1,) or last.shape != (p,) or not np.all(np.isfinite(params)):
            raise SeqlabError(
                f"{path}: AR({p}) needs {p + 1} finite params and {p} last values, got {params.shape} and "
                f"{last.shape}; save it again"
            )
        return cls(p=p, params=params, nobs=nobs, last=last, **fields)


class AR:
    r"""AR(p) with a constant: x_t = b + sum_{i=1..p} w_i x_{t-i} (notes: Time series › Autoregressive models).

    ``AR(9).fit(series)`` or ``AR(ARConfig(p=2, max_p=12, ic="bic")).fit(series)``; with ``max_p`` set,
    the order is chosen by :func:`select_order` before fitting.

    !!! equation "Time series › Autoregressive models"
        $x_t = b + \sum_{i=1}^{p} w_i x_{t-i}$: AR(p), the next value as a constant plus a weighted sum of the
        $p$ values before it.
    """

    def __init__(self, config: ARConfig | int = 2) -> None:
        self.config = config if isinstance(config, ARConfig) else ARConfig(p=_check_order(config))

    def _order(self, series: Any) -> int:
        c = self.config
        return select_order(series, c.max_p, c.ic) if c.max_p else c.p

    def fit(self, series: Any) -> FittedAR:
        r"""Least squares in closed form: params = pinv(X) @ Y (specs/metrics.md 3.2).

        !!! equation "Time series › Least-squares fit (beyond the notes)"
            $\hat{\theta} = \arg\min_\theta \sum_t (x_t - X_t \theta)^2 = X^{+} Y$: the coefficients $\theta =
            [b, w_1, \dots, w_p]$ that minimise the squared one-step error, by the pseudo-inverse of the window
            matrix."""
        p = self._order(series)
        x = as_series(series, p)
        X, Y = design_matrix(x, p)
        params = np.linalg.pinv(X) @ Y  # (1 + p, nobs) @ (nobs,) -> (1 + p,)
        return FittedAR.from_params(x, p, params)

    def fit_gradient(self, series: Any, steps: int = 2000, lr: float = 0.1, momentum: float = 0.9) -> FittedAR:
        r"""The neural view: a linear layer on the windows, trained by full-batch gradient descent.

        Loss: mean over t of (x_t - b - w . [x_{t-1}..x_{t-p}])^2, the least-squares loss of :meth:`fit`.
        The series is standardised first, z = (x - mean) / std, so one learning rate suits any series;
        the coefficients are mapped back exactly: w stays, b = mean (1 - sum w) + std * b_z. Starting from
        zero weights (no randomness), heavy-ball momentum; the loss is convex, so it converges to the
        closed-form coefficients (the defaults reach ~1e-12 on sunspots p = 9, births p = 7 and
        log-differenced airline p = 13; badly conditioned windows need more steps).

        !!! equation "Time series › Least-squares fit (beyond the notes)"
            $\mathcal{L}(b, w) = \frac{1}{n} \sum_t \left(x_t - b - \sum_{i=1}^{p} w_i x_{t-i}\right)^2$: the same
            squared error minimised by gradient descent, AR(p) as a one-layer network on the windows.
        """
        import torch

        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise SeqlabError(f"steps must be an integer >= 1, got {steps!r}")
        if not (isinstance(lr, (int, float)) and lr > 0 and math.isfinite(lr)):
            raise SeqlabError(f"lr must be a positive number, got {lr!r}")
        p = self._order(series)
        x = as_series(series, p)
        mean, std = float(x.mean()), float(x.std())
        X, Y = design_matrix((x - mean) / std, p)
        windows = torch.from_numpy(X[:, 1:].copy())  # (nobs, p): [z_{t-1}, ..., z_{t-p}]
        target = torch.from_numpy(Y.copy())  # (nobs,)
        layer = torch.nn.Linear(p, 1, dtype=torch.float64)  # weight (1, p) = w, bias (1,) = b
        torch.nn.init.zeros_(layer.weight)
        torch.nn.init.zeros_(layer.bias)
        opt = torch.optim.SGD(layer.parameters(), lr=lr, momentum=momentum)
        for _ in range(steps):
            opt.zero_grad()
            loss = torch.mean((layer(windows).squeeze(1) - target) ** 2)  # (nobs, 1) -> (nobs,)
            loss.backward()
            opt.step()
        if not torch.isfinite(loss):
            raise SeqlabError(f"gradient descent diverged (loss {loss.item()}); lower lr (now {lr})")
        w = layer.weight.detach().numpy()[0].astype(np.float64)  # (p,)
        b = mean * (1.0 - w.sum()) + std * float(layer.bias.detach()[0])
        return FittedAR.from_params(x, p, np.concatenate([[b], w]))


def order_criteria(series: Any, max_p: int) -> dict[int, dict[str, float]]:
    """AIC/BIC/HQIC of AR(p), p = 1..max_p, all fitted on the same rows t = max_p..n-1.

    Computed as ``ar_select_order(series, max_p)`` does (its ``.aic``, ``.bic``, ``.hqic`` values):
    each p is an OLS fit on the first 1 + p columns of the max_p design matrix, with
    llf = -(n/2) (ln(2 pi sigma2) + 1) and p + 1 counted parameters (statsmodels counts the lags and
    sigma2 here but not the constant, so these sit 2 / ln n / 2 ln ln n below :class:`FittedAR`'s own
    criteria on the same rows; the ranking over p is the same). statsmodels also scores p = 0, the
    mean alone; that is no AR model and is left out here.
    """
    max_p = _check_order(max_p, "max_p")
    x = as_series(series, max_p)
    X, Y = design_matrix(x, max_p, hold_back=max_p)  # (nobs, 1 + max_p): the common sample
    nobs = Y.shape[0]
    table: dict[int, dict[str, float]] = {}
    for p in range(1, max_p + 1):
        Xp = X[:, : 1 + p]  # (nobs, 1 + p)
        resid = Y - Xp @ (np.linalg.pinv(Xp) @ Y)
        sigma2 = 1.0 / nobs * np.sum(resid**2, axis=0)
        llf = -nobs * (np.log(2 * np.pi * sigma2) + 1) / 2
        table[p] = {k: float(v) for k, v in _criteria(llf, nobs, p + 1).items()}
    return table


def select_order(series: Any, max_p: int, ic: str = "aic") -> int:
    r"""The p in 1..max_p with the smallest criterion on the common sample (ties: the smaller p).

    !!! equation "Time series › Autoregressive models (beyond the notes)"
        $\hat{p} = \arg\min_{1 \le p \le p_{max}} \mathrm{AIC}(p),\ \mathrm{AIC}(p) = -2 \ln L + 2 (p + 1)$: "how
        much to go back?" answered by an information criterion over fits on the same rows, with $p + 1$
        parameters (the $p$ weights and $\sigma^2$, not $b$), as statsmodels' ``ar_select_order`` counts them
        (``model.ic`` = "bic" or "hqic": other penalties).
        default: model.ic = "aic"

    !!! departure "Time series › Autoregressive models (notation)"
        notes: "how much to go back?", with no criterion; tutorial 1 writes $\mathrm{AIC} = -2\ell + 2(k + 1)$
        with $k = p + 1$ coefficients, $p + 2$ parameters, as ``FittedAR`` counts them.
        seqlab: ``select_order`` ranks statsmodels' values, $p + 1$ parameters (the constant not counted): every
        value sits 2 lower (BIC: $\ln n$, HQIC: $2 \ln \ln n$), so the chosen $p$ is the same."""
    if ic not in CRITERIA:
        raise SeqlabError(f"ic must be one of {', '.join(CRITERIA)}, got {ic!r}")
    table = order_criteria(series, max_p)
    return min(table, key=lambda p: (table[p][ic], p))

