"""Chapter 1's solutions, one function per exercise (named as the exercise asks), and the planted wrong answers:
each usual mistake written as a learner writes it, which the checker must name (tests/test_course.py).

The site shows each solution in a collapsed block under its exercise; the notebooks never contain them."""

import math

import torch


def ar_design_matrix(x, p):
    n = x.shape[0]
    # lag column i is the series shifted by i: x_{t-i} for t = p .. n-1
    lags = [x[p - i:n - i] for i in range(1, p + 1)]  # newest first: lag 1, lag 2, ...
    X = torch.stack([torch.ones(n - p, dtype=x.dtype), *lags], dim=1)  # (n - p, 1 + p)
    Y = x[p:].clone()  # (n - p,)
    return X, Y


def ar_fit(x, p):
    n = x.shape[0]
    lags = [x[p - i:n - i] for i in range(1, p + 1)]  # lag i: x_{t-i} for t = p .. n-1, newest first
    X = torch.stack([torch.ones(n - p, dtype=x.dtype), *lags], dim=1)  # (n - p, 1 + p)
    Y = x[p:]
    return torch.linalg.lstsq(X, Y[:, None]).solution[:, 0]  # (1 + p,): [b, w_1, ..., w_p]


def ar_fit_statistics(x, params):
    p, n = params.shape[0] - 1, x.shape[0]
    X = torch.stack([torch.ones(n - p, dtype=x.dtype), *(x[p - i:n - i] for i in range(1, p + 1))], dim=1)
    Y = x[p:]  # the window matrix of 01.1: rows [1, x_{t-1}, ..., x_{t-p}], targets x_t
    resid = Y - X @ params
    nobs, k = Y.shape[0], p + 1
    sigma2 = (resid @ resid).item() / nobs  # the MLE: over N, not N - k
    llf = -nobs / 2 * (math.log(2 * math.pi) + math.log(sigma2) + 1)
    n_params = k + 1  # b, the weights and sigma2
    return {"sigma2": sigma2, "llf": llf, "aic": -2 * llf + 2 * n_params,
            "bic": -2 * llf + math.log(nobs) * n_params, "hqic": -2 * llf + 2 * math.log(math.log(nobs)) * n_params}


def ar_order_criteria(x, max_p):
    n = x.shape[0]
    lags = [x[max_p - i:n - i] for i in range(1, max_p + 1)]
    X = torch.stack([torch.ones(n - max_p, dtype=x.dtype), *lags], dim=1)  # the common rows t = max_p .. n-1
    Y = x[max_p:]
    nobs = Y.shape[0]
    aic = []
    for p in range(1, max_p + 1):
        Xp = X[:, :1 + p]  # the constant and lags 1..p
        theta = torch.linalg.lstsq(Xp, Y[:, None]).solution[:, 0]
        resid = Y - Xp @ theta
        sigma2 = (resid @ resid).item() / nobs
        llf = -nobs / 2 * (math.log(2 * math.pi * sigma2) + 1)
        aic.append(-2 * llf + 2 * (p + 1))  # the p weights and sigma2
    aic = torch.tensor(aic, dtype=torch.float64)
    return aic, int(torch.argmin(aic)) + 1  # argmin takes the first of equal values: the smaller p


def ar_one_step_forecast(params, x):
    p = params.shape[0] - 1
    window = x[-p:].flip(0)  # x_{n-1}, ..., x_{n-p}: newest first, as w_1 .. w_p
    return (params[0] + params[1:] @ window).item()


def ar_forecast(params, x, steps):
    p = params.shape[0] - 1
    history = x[-p:].tolist()  # oldest first
    out = []
    for _ in range(steps):
        window = torch.tensor(history[::-1][:p], dtype=torch.float64)  # newest first
        value = (params[0] + params[1:] @ window).item()
        out.append(value)
        history.append(value)  # the forecast is the next step's newest value
    return torch.tensor(out, dtype=torch.float64)


# ------------------------------------------------------------------------------------------------------
# planted wrong answers: exercise id -> {mistake name: a learner's function with that mistake}


def _design_oldest_first(x, p):  # the notes' slide: t_0 t_1 t_2 -> t_3
    n = x.shape[0]
    windows = torch.stack([x[t - p:t] for t in range(p, n)])  # (n - p, p), oldest first
    return torch.cat([torch.ones(n - p, 1, dtype=x.dtype), windows], dim=1), x[p:]


def _design_constant_last(x, p):
    n = x.shape[0]
    lags = [x[p - i:n - i] for i in range(1, p + 1)]
    return torch.stack([*lags, torch.ones(n - p, dtype=x.dtype)], dim=1), x[p:]


def _design_no_constant(x, p):
    n = x.shape[0]
    return torch.stack([x[p - i:n - i] for i in range(1, p + 1)], dim=1), x[p:]


def _design_with_target(x, p):
    n = x.shape[0]
    lags = [x[p - i:n - i] for i in range(0, p)]  # lags 0 .. p-1: x_t is in its own row
    return torch.stack([torch.ones(n - p, dtype=x.dtype), *lags], dim=1), x[p:]


def _fit_with(design):
    def fit(x, p):
        X, Y = design(x, p)
        return torch.linalg.solve(X.T @ X, X.T @ Y)  # the normal equations

    return fit


def _fit_mean_as_constant(x, p):
    mean = x.mean()
    X, Y = _design_no_constant(x - mean, p)
    w = torch.linalg.lstsq(X, Y[:, None]).solution[:, 0]
    return torch.cat([mean[None], w])


def _statistics_with(divisor=lambda nobs, k: nobs, rows=lambda n, p: n - p, n_params=lambda k: k + 1,
                     constants=True):
    def ar_fit_statistics(x, params):
        p = params.shape[0] - 1
        X, Y = ar_design_matrix(x, p)
        resid = Y - X @ params
        nobs, k = rows(x.shape[0], p), p + 1
        sigma2 = (resid @ resid).item() / divisor(nobs, k)
        llf = -nobs / 2 * ((math.log(2 * math.pi) + 1 if constants else 0.0) + math.log(sigma2))
        m = n_params(k)
        return {"sigma2": sigma2, "llf": llf, "aic": -2 * llf + 2 * m, "bic": -2 * llf + math.log(nobs) * m,
                "hqic": -2 * llf + 2 * math.log(math.log(nobs)) * m}

    return ar_fit_statistics


def _order_own_rows(x, max_p):
    aic = []
    for p in range(1, max_p + 1):
        X, Y = ar_design_matrix(x, p)  # rows t = p .. n-1: a different sample for each p
        theta = torch.linalg.lstsq(X, Y[:, None]).solution[:, 0]
        resid = Y - X @ theta
        nobs = Y.shape[0]
        llf = -nobs / 2 * (math.log(2 * math.pi * (resid @ resid).item() / nobs) + 1)
        aic.append(-2 * llf + 2 * (p + 1))
    aic = torch.tensor(aic, dtype=torch.float64)
    return aic, int(torch.argmin(aic)) + 1


def _order_constant_counted(x, max_p):
    aic, best = ar_order_criteria(x, max_p)
    return aic + 2, best  # -2 llf + 2 (p + 2)


def _order_largest(x, max_p):
    aic, _ = ar_order_criteria(x, max_p)
    return aic, int(torch.argmax(aic)) + 1


def _one_step_reversed(params, x):
    p = params.shape[0] - 1
    return (params[0] + params[1:] @ x[-p:]).item()  # w_1 with the oldest value of the window


def _one_step_early(params, x):
    p = params.shape[0] - 1
    return (params[0] + params[1:] @ x[-p - 1:-1].flip(0)).item()


def _one_step_no_constant(params, x):
    p = params.shape[0] - 1
    return (params[1:] @ x[-p:].flip(0)).item()


def _forecast_not_fed_back(params, x, steps):
    p = params.shape[0] - 1
    window = x[-p:].flip(0)
    return torch.stack([params[0] + params[1:] @ window for _ in range(steps)])


def _forecast_reversed(params, x, steps):
    p = params.shape[0] - 1
    window = x[-p:].tolist()  # oldest first, and kept so: w_1 meets the oldest
    out = []
    for _ in range(steps):
        value = params[0].item() + sum(w * v for w, v in zip(params[1:].tolist(), window))
        out.append(value)
        window = window[1:] + [value]
    return torch.tensor(out, dtype=torch.float64)


def _forecast_one_late(params, x, steps):
    p = params.shape[0] - 1
    history = x[-p:].tolist()
    out = []
    for _ in range(steps + 1):
        window = torch.tensor(history[::-1][:p], dtype=torch.float64)
        history.append((params[0] + params[1:] @ window).item())
        out = history[p + 1:]  # from the second forecast on
    return torch.tensor(out, dtype=torch.float64)


PLANTED = {
    "01.1": {
        "columns-reversed": _design_oldest_first,
        "constant-last": _design_constant_last,
        "no-constant": _design_no_constant,
        "window-includes-target": _design_with_target,
    },
    "01.2": {
        "columns-reversed": _fit_with(_design_oldest_first),
        "constant-last": _fit_with(_design_constant_last),
        "no-constant": _fit_with(_design_no_constant),
        "mean-as-constant": _fit_mean_as_constant,
    },
    "01.3": {
        "variance-over-n-minus-k": _statistics_with(divisor=lambda nobs, k: nobs - k),
        "series-length-for-n": _statistics_with(rows=lambda n, p: n),
        "one-parameter-short": _statistics_with(n_params=lambda k: k),
        "llf-constants-dropped": _statistics_with(constants=False),
    },
    "01.4": {
        "rows-not-common": _order_own_rows,
        "constant-counted": _order_constant_counted,
        "largest-chosen": _order_largest,
    },
    "01.5": {
        "weights-reversed": _one_step_reversed,
        "window-one-step-early": _one_step_early,
        "constant-dropped": _one_step_no_constant,
    },
    "01.6": {
        "not-fed-back": _forecast_not_fed_back,
        "weights-reversed": _forecast_reversed,
        "one-step-late": _forecast_one_late,
    },
}
