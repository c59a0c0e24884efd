"""Forecasting: held-out-tail RMSE of AR(p*) (p by AIC), LSTM and Transformer, beside statsmodels AutoReg.

Series (../shared/data/timeseries): the daily female births (365 values, tail 30), the Melbourne daily minimum
temperatures (3,650 values, tail 60) and the airline passengers, log-differenced as the data README advises
(143 values, tail 24). Each series is cut into train, valid (as long as the tail) and the held-out tail;
every model forecasts the whole tail recursively from the end of train + valid, and the RMSE is taken
against the tail, in the series' units.

- seqlab AR: the `ar` preset (p in 1..max_p by AIC, least squares on train + valid) through seqlab.api.
- statsmodels, in its documented path for this workload: ``sel = ar_select_order(history, max_p, ic="aic",
  trend="c")`` then ``sel.model.fit()`` (``AROrderSelectionResults.model`` is the AutoReg of the selected lags, built
  by the selection itself: https://www.statsmodels.org/stable/generated/statsmodels.tsa.ar_model.ar_select_order.html);
  the forecasts are compared with seqlab's (max |difference|).
- LSTM and Transformer: the `forecast-lstm` and `forecast-transformer` presets (windows of 32 values, trained on
  train with the valid part for validation), one run per seed; the median RMSE over the seeds is reported
  with the range, since a single tail and a small network make the figure noisy.
- the history's mean as a forecast, for scale.

Fit times: AR with order selection, each side on the same numpy array, timed with bench/common.py's
``interleaved``: ``--repeats`` rounds, both sides in a freshly shuffled order every round, one more warm-up round
discarded (the first call, with its imports and caches, is never counted), ``gc.collect()`` before every call;
the median round. Numpy's BLAS is held to one thread on both sides (threadpoolctl; on a shared 2-core machine
OpenBLAS's threads swing these fits by 10x). The neural fits (no peer) are whole ``seqlab.api.train`` runs (one
thread, CPU). One-step
forecasts: the time of ``ONE_STEP`` calls of ``predict_next`` on the loaded neural forecaster (its history growing by
one value a call, over the series' last ``ONE_STEP`` values; computed in memory, no file per call).

    .venv/bin/python bench/forecast.py [--seeds 3] [--repeats 5]

Prints one JSON line last; ``ratio`` = statsmodels' AR fit time (order selection + fit) over seqlab's,
geometric mean over the series (above 1 = seqlab faster); the RMSEs are in the same line.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

from common import interleaved, machine, median, require, write_section  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "timeseries"
SERIES = {  # name: (file, transform, held-out tail, max_p)
    "births": ("daily-total-female-births.csv", None, 30, 30),
    "temperatures": ("daily-min-temperatures.csv", None, 60, 30),
    "airline (log-diff)": ("airline-passengers.csv", "logdiff", 24, 24),
}
NEURAL = {"LSTM": "forecast-lstm", "Transformer": "forecast-transformer"}
ONE_STEP = 365  # one-step forecasts timed per neural forecaster (a year of daily values)


def prepare(folder: Path, name: str) -> tuple[Path, np.ndarray, int, int]:
    """The series as a one-column CSV (transformed if needed), its values, tail length and max_p."""
    from seqlab.data.series import read_series

    file, transform, tail, max_p = SERIES[name]
    values = read_series(DATA / file)[0]
    if transform == "logdiff":
        values = np.diff(np.log(values))
    path = folder / f"{name.split()[0]}.csv"
    path.write_text("value\n" + "".join(f"{v!r}\n" for v in values.tolist()))
    return path, values, tail, max_p


def split_override(n: int, tail: int) -> str:
    """data.split that cuts exactly `tail` values of test and `tail` of valid (boundaries are rounded)."""
    return f"data.split=[{(n - 2 * tail) / n!r}, {tail / n!r}, {tail / n!r}]"


PEER = 'statsmodels ar_select_order(ic="aic", trend="c") then sel.model.fit(), BLAS at 1 thread'


def one_step_seconds(forecaster, values: np.ndarray) -> float:
    """Seconds for ``ONE_STEP`` one-step forecasts, each from all the values before it."""
    start = max(1, len(values) - ONE_STEP)
    t = time.perf_counter()
    for i in range(start, len(values)):
        forecaster.predict_next(values[:i])
    return time.perf_counter() - t


def forecast_tolerance(fitted, history: np.ndarray, steps: int) -> float:
    """How far two least-squares AR fits of one order on ``history`` may forecast apart: a rounding bound.

    Each side solves the same float64 least-squares problem (seqlab: pinv; statsmodels: its own solver), each
    backward stable, so each side's coefficients lie within κ₂(X)·γ_m·(1 + ‖θ‖₁) of the exact ones, X the m x (1 + p)
    window matrix (Higham §20.1, first order), twice that apart. A forecast b + Σ w_i v_i moves by at most that
    times (1 + p)·max|v|, and a recursive forecast carries each earlier forecast's error on: to first order the
    ``steps`` forecasts' errors add (Higham §3.3). Bound: 2·steps·κ₂(X)·γ_m·(1 + ‖θ‖₁)·(1 + p)·max|history|
    (seqlab.base.bounds.gamma)."""
    from seqlab.base.bounds import gamma
    from seqlab.models.autoregressive import as_series, design_matrix

    X, _ = design_matrix(as_series(history, fitted.p), fitted.p)
    kappa = float(np.linalg.cond(X))
    scale = (1 + float(np.abs(fitted.params).sum())) * (1 + fitted.p) * float(np.abs(history).max())
    return 2 * steps * kappa * gamma(X.shape[0], np.float64) * scale


def require_same_forecasts(name: str, p_ours: int, p_theirs: int, ours: np.ndarray, theirs: np.ndarray,
                           tolerance: float, what: str = "statsmodels'") -> float:
    """The timed fits agree: the same order and forecasts within ``tolerance`` (:func:`forecast_tolerance`), or
    the bench fails (no section written). Returns the max |difference|."""
    require(p_ours == p_theirs, f"{name}: seqlab's timed AR fit chose p = {p_ours}, {what} p = {p_theirs}")
    diff = float(np.abs(np.asarray(ours) - np.asarray(theirs)).max())
    require(diff <= tolerance, f"{name}: the timed AR fit's forecasts differ from {what} by {diff:.3e} > "
                               f"{tolerance:.3e} (forecast_tolerance)")
    return diff


def rmse(f, y) -> float:
    return float(np.sqrt(np.mean((np.asarray(f) - np.asarray(y)) ** 2)))


def bench_series(name: str, folder: Path, seeds: int, repeats: int) -> dict:
    from seqlab import api
    from seqlab.models.autoregressive import AR, ARConfig
    from statsmodels.tsa.ar_model import ar_select_order

    path, values, tail, max_p = prepare(folder, name)
    history, truth = values[:-tail], values[-tail:]
    base = [f"data.source={path}", split_override(len(values), tail), "train.progress=false"]
    quiet = lambda *a, **k: None  # noqa: E731
    row: dict = {"series": name, "n": len(values), "tail": tail}

    run = api.train_run("ar", folder / "ar", overrides=[*base, f"model.max_p={max_p}"], force=True, log=quiet)
    ar = api.load(run)
    assert ar.series.n_test == tail and len(ar.series.history) == len(history), "split boundaries moved"
    ours = np.asarray(ar.predict(steps=tail))
    fitted: dict = {}

    def seqlab_fit() -> None:
        fitted["seqlab"] = AR(ARConfig(max_p=max_p)).fit(history)

    def statsmodels_fit() -> None:  # the documented path: the selection's own model, fitted
        sel = ar_select_order(history, max_p, ic="aic", trend="c")
        fitted["statsmodels"] = sel, sel.model.fit()

    kept = interleaved({"seqlab": seqlab_fit, "statsmodels": statsmodels_fit}, rounds=repeats)
    row["ar_fit_s"], row["statsmodels_fit_s"] = median(kept["seqlab"]), median(kept["statsmodels"])
    sel, res = fitted["statsmodels"]
    p_sm = max(sel.ar_lags or [0])
    theirs = res.forecast(tail)
    timed = fitted["seqlab"]  # the fit the timing measured, checked against statsmodels' timed fit
    tolerance = forecast_tolerance(timed, history, tail)
    diff = require_same_forecasts(name, timed.p, p_sm, timed.forecast(tail), theirs, tolerance)
    # the API run (its RMSE is the table's) holds the same model as the timed fit
    require_same_forecasts(name, ar.model.p, timed.p, ours, timed.forecast(tail), tolerance, "the timed fit's")
    row.update(p_seqlab=timed.p, p_statsmodels=p_sm, rmse_ar=ar.evaluate("test")["rmse"],
               rmse_statsmodels=rmse(theirs, truth), forecast_max_abs_diff=diff, forecast_tolerance=tolerance,
               rmse_mean=rmse(np.full(tail, history.mean()), truth))

    for label, preset in NEURAL.items():
        scores, times = [], []
        for seed in range(seeds):
            t = time.perf_counter()
            run = api.train_run(preset, folder / preset, overrides=[*base, f"train.seed={seed}"], force=True, log=quiet)
            times.append(time.perf_counter() - t)
            forecaster = api.load(run, device="cpu")
            scores.append(forecaster.evaluate("test")["rmse"])
        key = label.lower()
        row[f"{key}_one_step_s"] = one_step_seconds(forecaster, values)  # the last seed's forecaster
        row[f"rmse_{key}"], row[f"rmse_{key}_range"] = median(scores), (min(scores), max(scores))
        row[f"{key}_fit_s"] = median(times)
    return row


def table(rows: list[dict], seeds: int, repeats: int) -> str:
    lines = ["| series (values, tail) | mean | statsmodels AR(p*): ar_select_order(ic=aic, trend=c).model.fit() | "
             "seqlab AR(p*) | seqlab LSTM | "
             "seqlab Transformer |", "|---|---|---|---|---|---|"]
    for r in rows:
        neural = [f"{r[f'rmse_{k}']:.4g} ({r[f'rmse_{k}_range'][0]:.4g}-{r[f'rmse_{k}_range'][1]:.4g}); "
                  f"{r[f'{k}_fit_s']:.1f} s" for k in ("lstm", "transformer")]
        lines.append(f"| {r['series']} ({r['n']}, {r['tail']}) | {r['rmse_mean']:.4g} | "
                     f"{r['rmse_statsmodels']:.4g} (p={r['p_statsmodels']}); {1e3 * r['statsmodels_fit_s']:.1f} ms | "
                     f"{r['rmse_ar']:.4g} (p={r['p_seqlab']}); {1e3 * r['ar_fit_s']:.1f} ms | "
                     f"{neural[0]} | {neural[1]} |")
    diffs = "; ".join(f"{r['series']}: {r['forecast_max_abs_diff']:.1e} (tolerance {r['forecast_tolerance']:.1e})"
                      for r in rows)
    names = {"ar": "AR(p*) (seqlab and statsmodels alike)", "lstm": "LSTM", "transformer": "Transformer",
             "mean": "the mean"}
    best = "; ".join(f"{r['series']}: {names[min(names, key=lambda k: r[f'rmse_{k}'])]}" for r in rows)
    one_step = "; ".join(f"{r['series']}: LSTM {r['lstm_one_step_s']:.2f} s, Transformer "
                         f"{r['transformer_one_step_s']:.2f} s" for r in rows)
    return ("Held-out-tail RMSE (series units; the airline series is log-differenced) of recursive forecasts from "
            "the end of train + valid, then the fit time. AR: p* chosen by AIC up to max_p "
            f"({', '.join(str(SERIES[r['series']][3]) for r in rows)}), "
            "fit = order selection + least squares (statsmodels: `ar_select_order(history, max_p, ic=\"aic\", "
            f"trend=\"c\")` then `sel.model.fit()`, its documented path), {repeats} interleaved rounds in a shuffled "
            "order, one more warm-up round discarded, `gc.collect()` before every call, the median round; BLAS on one "
            "thread on both sides. "
            "LSTM / Transformer: the "
            f"`forecast-lstm` / `forecast-transformer` presets, median (min-max) over {seeds} seeds, fit = a whole "
            "`seqlab.api.train` run on one CPU thread. `mean` forecasts the history's mean.\n\n"
            + "\n".join(lines) + "\n\nseqlab's timed AR fit and statsmodels' chose the same p and forecast the "
            f"tail alike, max |diff| per series: {diffs} (checked: past the tolerance, a rounding bound "
            "from the window matrix's condition number, `forecast_tolerance`, the run fails before this section). "
            f"Lowest RMSE per series: {best} (one held-out tail per series).\n\n"
            f"{ONE_STEP} one-step forecasts (`predict_next`, each from every value before it, in memory): "
            f"{one_step}.\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=3, help="training seeds per neural forecaster")
    ap.add_argument("--repeats", type=int, default=5,
                    help="interleaved rounds of AR fits, each side once a round (one more warm-up round discarded)")
    args = ap.parse_args()
    from threadpoolctl import threadpool_limits

    rows = []
    with tempfile.TemporaryDirectory() as folder, threadpool_limits(1):
        for name in SERIES:
            rows.append(bench_series(name, Path(folder), args.seeds, args.repeats))
            print(json.dumps(rows[-1]), file=sys.stderr)
    write_section("forecast", "## Forecasting: AR(p*), LSTM, Transformer vs statsmodels AutoReg (`bench/forecast.py`)"
                  "\n\n" + table(rows, args.seeds, args.repeats))
    ratio = math.exp(np.mean([math.log(r["statsmodels_fit_s"] / r["ar_fit_s"]) for r in rows]))
    rmses = {r["series"]: {k[5:]: r[k] for k in r if k.startswith("rmse_") and not k.endswith("range")} for r in rows}
    print(json.dumps({"bench": "forecast", "machine": machine(),
                      "peer_best": PEER,
                      "ratio": ratio, "rmse": rmses,
                      "one_step_s": {r["series"]: {k: r[f"{k}_one_step_s"] for k in ("lstm", "transformer")}
                                     for r in rows},
                      "forecast_max_abs_diff": max(r["forecast_max_abs_diff"] for r in rows)}))


if __name__ == "__main__":
    main()
