"""Forecasting (notes: Time series): AR(p) fitted in closed form, or a neural forecaster trained on the same windows.

Data. One univariate series from a CSV file (``data.source``, or ``data.train``) or a named series
(``data.source = daily-min-temperatures``, ``airline-passengers`` or ``daily-total-female-births``: datasets
downloaded into the cache as the others are, ``seqlab data list``), read by
:func:`seqlab.data.series.read_column`: the values column ``data.column`` (a header name or a 0-based index;
empty = the last column whose first data row is a number) and, optionally, the labels of ``data.date_column``
(used on the plot). The series is cut into contiguous parts, in time order: train, valid, and the held-out
tail test. The tail has ``data.horizon`` values when that is > 0, else the test fraction of ``data.split``
(boundaries as for text: ``round(n * f_train)``, ``round(n * (f_train + f_valid))``); valid has the valid
fraction of ``data.split``. The parts and the values are written to ``RUN/series.json`` (floats exact), so a run
needs no CSV after training. ``data.valid`` / ``data.test`` files are refused: a series' parts follow each other.

Models (``model.arch``):

- ``ar``: AR(p) with a constant (:mod:`seqlab.models.autoregressive`, bit-identical to statsmodels' AutoReg),
  fitted by least squares on train + valid (everything before the tail; an AR fit has nothing to tune on
  valid: with ``model.max_p`` > 0 the order is chosen by ``model.ic`` in-sample, as ar_select_order). No
  Trainer: the run directory still holds ``model.safetensors`` (params and the last p values, float64),
  ``trainer.safetensors`` (empty) and ``state.json`` (p, sigma2, llf, criteria, format_version).
- ``lstm``, ``gru``, ``transformer``: :mod:`seqlab.models.forecaster`, over windows of ``model.max_len`` values,
  trained with the shared :class:`~seqlab.training.trainer.Trainer` on the windows whose target lies in train, on the
  series standardised with the train part's mean and standard deviation. Validation: the mean squared
  one-step error (standardised) of the windows whose target lies in valid (``loss``) and the RMSE of the
  recursive forecast of the valid part from the end of train (``rmse``, original units).
  ``train.precision = "auto"`` means fp32 here: a bf16 forecast carries only ~3 significant digits.

Forecasts are recursive and computed in memory. ``forecast(N)`` forecasts the N values after the end of the
series; ``forecast(N, split="test")`` (and ``predict(steps=N)``) the N values after train + valid (the first of
them cover the held-out tail); ``forecast(N, history=series)`` continues a new series (the neural forecasters read
it standardised with the run's train statistics; no file is written) and ``predict_next(history)`` is its one
value, for AR and neural forecasters alike. ``evaluate("test")`` compares the forecast
from the end of train + valid with the tail, ``evaluate("valid")`` the forecast from the end of train with valid
(for AR in-sample: its coefficients saw valid), ``evaluate(data=series)`` the forecast of a series' last values
(as many as the tail has) from the values before them: ``{"rmse": sqrt(mean (f - x)^2), "mae": mean |f - x|}``
in the series' units. ``plot()`` draws the history, the forecast of the tail and the tail itself as a matplotlib
Figure; training ends by writing it to ``RUN/plots/forecast.png``. The series and its parts: :mod:`seqlab.tasks.series_parts`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
from torch import nn

from seqlab.training import checkpoint
from seqlab.base.config import RunConfig
from seqlab.data.in_memory import series_values
from seqlab.base.errors import SeqlabError, given, named
from seqlab.base.io import versions
from seqlab.models.autoregressive import AR, ARConfig, FittedAR
from seqlab.models.forecaster import FORECASTER_CONFIGS, RecurrentForecaster, TransformerForecaster, build_forecaster, \
    recursive_forecast, window_matrix
from seqlab.training.devices import Dist, inference_device
from seqlab.tasks.series_parts import SERIES_FILE, Series, load_series, read_splits, save_series
from seqlab.training.trainer import RUN_KEYS, Trainer, shard_rows
from seqlab.tasks.trained import Trained

MODEL_CONFIGS = {"ar": ARConfig, **FORECASTER_CONFIGS}
# The train.* keys used, per model.arch: AR(p) is fitted in closed form (no Trainer); the neural forecasters
# use the Trainer's keys but eval_batches (validation always scores the whole valid part).
TRAIN_KEYS = {"ar": ("progress",),
              **dict.fromkeys(FORECASTER_CONFIGS, tuple(k for k in RUN_KEYS if k != "eval_batches"))}
BEST_BY = ("loss", "mae", "rmse")  # the validation metrics train.best_by may name (of the recursive forecast)
SPLITS = ("train", "valid", "test")
EVAL_BATCH = 1024  # windows per validation forward pass


# ------------------------------------------------------------------------------------------------------
# AR(p): a closed-form fit stored as a checkpoint


class ARWeights(nn.Module):
    """A FittedAR's arrays as float64 buffers, so an AR run has a ``model.safetensors`` like every run."""

    params: torch.Tensor  # the buffers __init__ registers (declared for type checkers)
    last: torch.Tensor

    def __init__(self, p: int) -> None:
        super().__init__()
        self.register_buffer("params", torch.zeros(p + 1, dtype=torch.float64))  # [b, w_1, ..., w_p]
        self.register_buffer("last", torch.zeros(p, dtype=torch.float64))  # the last p values, oldest first


AR_FIELDS = ("p", "sigma2", "nobs", "llf", "aic", "bic", "hqic")  # what state.json keeps of a FittedAR


def save_ar(fitted: FittedAR, run_dir: Path) -> dict:
    weights = ARWeights(fitted.p)
    weights.params.copy_(torch.from_numpy(fitted.params))
    weights.last.copy_(torch.from_numpy(fitted.last))
    state = {"step": 0, "ar": {k: getattr(fitted, k) for k in AR_FIELDS},
             "versions": versions("numpy")}
    checkpoint.save(run_dir, weights, {}, state)
    return state


def load_ar(run_dir: Path) -> FittedAR:
    fields = checkpoint.load_state(run_dir).get("ar")
    if not isinstance(fields, dict) or set(AR_FIELDS) - set(fields):
        raise SeqlabError(f"{run_dir}/state.json has no AR fit (no \"ar\" fields); train the run again")
    weights = ARWeights(int(fields["p"]))
    checkpoint.load_model(weights, run_dir / "model.safetensors")
    stats: dict[str, Any] = {k: (int(v) if k in ("p", "nobs") else float(v)) for k, v in fields.items()
                             if k in AR_FIELDS}
    return FittedAR(params=weights.params.numpy(), last=weights.last.numpy(), **stats)


# ------------------------------------------------------------------------------------------------------
# neural forecasters: the training task


class ForecastTask:
    """Plugs a neural forecaster into :class:`seqlab.training.trainer.Trainer`: one example = one window and its target."""

    def __init__(self, model: RecurrentForecaster | TransformerForecaster, series: Series):
        self.model: nn.Module = model  # TrainTask's type
        self.series = series
        L = model.cfg.max_len
        if series.n_train < L + 1:
            raise SeqlabError(f"the train part has {series.n_train} values, fewer than model.max_len + 1 = {L + 1} "
                              "(one window and its target); use a longer series or a smaller model.max_len")
        z = series.standardised().astype(np.float32)
        X, Y = window_matrix(z, L, L, series.n_train)  # targets in train
        self.X, self.Y = torch.from_numpy(X), torch.from_numpy(Y)  # (windows, L), (windows,)
        v0 = series.start("valid")
        Xv, Yv = window_matrix(z, L, v0, v0 + series.n_valid)  # targets in valid (windows reach into train)
        self.Xv, self.Yv = torch.from_numpy(Xv), torch.from_numpy(Yv)
        self.train_tokens = len(self.Y)  # epoch size, in windows

    def train_batch(self, generator: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        rows = torch.randint(len(self.Y), (n,), generator=generator)  # batch
        return self.X[rows], self.Y[rows]  # (batch, L), (batch,)

    def shard(self, batch, rank: int, world: int):
        return shard_rows(batch, rank, world)

    def count(self, batch) -> int:
        return batch[1].numel()

    def loss_sum(self, model: nn.Module, batch, device: torch.device) -> torch.Tensor:
        x, y = (t.to(device, non_blocking=True) for t in batch)
        return ((model(x).float() - y) ** 2).sum()  # sum over windows of (x_hat_t - x_t)^2

    def validate(self, model: nn.Module, device: torch.device, max_batches: int | None) -> dict[str, float]:
        """The whole valid part every time (it is small; ``max_batches`` is not needed)."""
        if not len(self.Yv):
            return {"loss": math.nan}
        total = 0.0
        for i in range(0, len(self.Yv), EVAL_BATCH):
            x, y = self.Xv[i:i + EVAL_BATCH].to(device), self.Yv[i:i + EVAL_BATCH].to(device)
            total += float(((model(x).float() - y) ** 2).sum())
        forecast = forecast_neural(model, self.series, self.series.values[:self.series.start("valid")],
                                   self.series.n_valid, device)
        return {"loss": total / len(self.Yv), **errors(forecast, self.series.part("valid"))}


def forecast_neural(model: nn.Module, series: Series, history: np.ndarray, steps: int,
                    device: torch.device) -> np.ndarray:
    """Recursive forecasts of ``steps`` values after ``history`` (seq,), in the series' units: the model reads
    the history standardised with the run's train statistics (``series.mean``, ``series.std``), as in training."""
    z = torch.from_numpy(((history - series.mean) / series.std).astype(np.float32)).to(device)  # seq
    out = recursive_forecast(model, z, steps).float().cpu().numpy().astype(np.float64)  # steps
    return out * series.std + series.mean


def errors(forecast: np.ndarray, truth: np.ndarray) -> dict[str, float]:
    """RMSE and MAE of a forecast against the values it forecasts."""
    e = np.asarray(forecast, dtype=np.float64) - np.asarray(truth, dtype=np.float64)
    return {"rmse": float(np.sqrt(np.mean(e**2))), "mae": float(np.mean(np.abs(e)))}


# ------------------------------------------------------------------------------------------------------
# training


def _series_for(cfg: RunConfig, run_dir: Path, resume: bool, dist: Dist) -> Series:
    """The series of a run: re-read from series.json on resume (training continues on the same data)."""
    if resume and (run_dir / SERIES_FILE).exists():
        return load_series(run_dir)
    series = read_splits(cfg)
    if dist.main:
        save_series(series, run_dir)
    return series


def train(cfg: RunConfig, run_dir: Path, *, resume: bool, dist: Dist, log=print) -> dict:
    run_dir = Path(run_dir)
    series = _series_for(cfg, run_dir, resume, dist)
    log(f"series {series.name!r}: {len(series.values):,} values; train {series.n_train:,}, "
        f"valid {series.n_valid:,}, held-out tail {series.n_test:,}")
    if cfg.arch == "ar":
        state = _train_ar(cfg, run_dir, series, resume, log)
    else:
        state = _train_neural(cfg, run_dir, series, resume, dist, log)
    if dist.main and not state.get("interrupted"):
        load(run_dir, cfg, device="cpu").plot(run_dir / "plots" / "forecast.png")
    return state


def _train_ar(cfg: RunConfig, run_dir: Path, series: Series, resume: bool, log) -> dict:
    if resume and checkpoint.exists(run_dir):
        log("already fitted (AR is fitted in closed form); nothing to do")
        return checkpoint.load_state(run_dir)
    fitted = AR(cfg.model).fit(series.history)
    log(f"AR({fitted.p}): b = {fitted.const:.6g}, w = [{', '.join(f'{w:.4g}' for w in fitted.coefs)}]; "
        f"sigma2 {fitted.sigma2:.6g}, aic {fitted.aic:.6g}")
    return save_ar(fitted, run_dir)


def _train_neural(cfg: RunConfig, run_dir: Path, series: Series, resume: bool, dist: Dist, log) -> dict:
    torch.manual_seed(cfg.train.seed)  # the initial weights
    # build_forecaster's return annotation (nn.Module) is wider than what it builds
    model = cast("RecurrentForecaster | TransformerForecaster", build_forecaster(cfg.model))
    task = ForecastTask(model, series)
    train_cfg = cfg.train if cfg.train.precision != "auto" else dataclasses.replace(cfg.train, precision="fp32")
    train_cfg = dataclasses.replace(train_cfg, eval_batches=0)  # its validation scores the whole valid part: rows say so
    trainer = Trainer(task, train_cfg, run_dir, dist=dist, log=log)
    n_params = sum(p.numel() for p in model.parameters())
    log(f"{cfg.arch} forecaster: {n_params:,} parameters; {task.train_tokens:,} training windows of "
        f"{cfg.model.max_len} values")
    return trainer.run(resume)


# ------------------------------------------------------------------------------------------------------
# a trained forecaster


def _check_steps(steps: object, name: str) -> None:
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise SeqlabError(f"{name} must be a whole number >= 1, got {steps!r}; ask for 1 or more forecasts")


class Forecaster(Trained):
    """A trained forecaster loaded from a run directory: ``forecast``, ``predict_next``, ``predict``, ``evaluate``,
    ``plot`` (Jupyter shows it as that plot).

    ``model`` is the :class:`~seqlab.models.autoregressive.FittedAR` (arch ``ar``) or the neural forecaster (an
    ``nn.Module``); :meth:`predict_next` and :meth:`forecast` work alike for both.
    """

    def __init__(self, run_dir: Path, cfg: RunConfig, series: Series, model: FittedAR | nn.Module,
                 device: torch.device):
        self.run_dir, self.config, self.series, self.model, self.device = run_dir, cfg, series, model, device

    def forecast(self, steps: int, history: Iterable[float] | None = None, split: str | None = None) -> np.ndarray:
        """Recursive forecasts (steps,) of the ``steps`` values after a history, in the series' units, computed in
        memory (no file is written or read):

        - by default after the end of the run's series (all of it: train, valid and the held-out tail);
        - with ``split`` (train, valid or test) after everything before that split of the run's series
          (``split="test"``: after train + valid, the first forecasts covering the held-out tail, as
          ``seqlab predict --steps N`` and :meth:`evaluate` forecast);
        - with ``history``, a new series to continue (a 1-D sequence, numpy array or pandas Series; a value that
          is not a finite number is an error naming it).

        The neural forecasters read the history standardised with the run's train statistics and the forecasts
        are put back in its units; AR(p) continues its last p values."""
        _check_steps(steps, "steps")
        if history is None:
            if split is None:
                return self._continue(self.series.values, int(steps), "the series")
            if split not in SPLITS:
                raise SeqlabError(f"unknown split {split!r}; valid splits: {', '.join(SPLITS)} (or none: after the "
                                  "end of the series)")
            return self._continue(self.series.values[:self.series.start(split)], int(steps), f"the {split} part")
        if isinstance(history, str):
            raise SeqlabError(f"history is the series to continue (numbers), got the str {history!r}; to forecast "
                              "from the start of a split of the run's series, pass split=...")
        if split is not None:
            raise SeqlabError(f"give history (a series to continue) or split={split!r} (where to start in the run's "
                              "series), not both")
        return self._continue(series_values(history, "history"), int(steps), "history")

    def predict_next(self, history: Iterable[float]) -> float:
        """The one value after ``history`` (as :meth:`forecast`'s ``history``), for AR and neural forecasters
        alike: ``forecast(1, history=history)[0]``; for AR(p) ``b + w_1 x_t + ... + w_p x_{t-p+1}``."""
        if history is None:
            raise SeqlabError("predict_next needs the history to continue (numbers); for the value after the run's "
                              "series use forecast(1)")
        return float(self.forecast(1, history=history)[0])

    def _continue(self, history: np.ndarray, steps: int, where: str) -> np.ndarray:
        """The forecasts after ``history``; ``where`` names it in messages."""
        if isinstance(self.model, FittedAR):
            p = self.model.p
            if len(history) < p:
                raise SeqlabError(f"AR({p}) needs {p} values before {where}, which has {len(history)}; give a longer "
                                  "history")
            # from the end of train + valid this is exactly the fit's own forecast (its `last` values)
            fitted = dataclasses.replace(self.model, last=history[len(history) - p:].copy())
            return fitted.forecast(steps)
        if not len(history):
            raise SeqlabError(f"{where} holds no values to continue; give at least one")
        return forecast_neural(self.model, self.series, history, steps, self.device)

    def predict(self, lines: list[str] | None = None, steps: int | None = None, beam: int | None = None) -> list[float]:
        """``seqlab predict --steps N``'s results: the ``steps`` forecasts after the end of train + valid (the
        first ones cover the held-out tail; ``forecast(steps, split="test")``)."""
        if beam is not None:
            raise SeqlabError(f"{named('beam')} is for translation; a forecast takes {given('steps', 'N')} only")
        if lines is not None or steps is None:
            raise SeqlabError("forecasting reads no input lines; give the number of values to forecast: "
                              f"{given('steps', 'N')}")
        _check_steps(steps, named('steps'))
        return [float(v) for v in self.forecast(steps, split="test")]

    def format_prediction(self, value: float) -> str:
        return repr(float(value))  # round-trips exactly

    def evaluate(self, split: str = "test", *, data: Iterable[float] | None = None) -> dict[str, float]:
        """RMSE and MAE of the recursive forecast of ``split`` (test: the held-out tail; valid). With ``data``, a
        series in memory (as ``history`` of :meth:`forecast`) instead: its last values, as many as the run's
        held-out tail has, are forecast from the values before them and compared with them."""
        if data is not None:
            values = series_values(data, "data")
            n = self.series.n_test
            if not n:
                raise SeqlabError(f"{self.run_dir} has no held-out tail, so no horizon to score data with; forecast "
                                  "it yourself: forecast(steps, history=data[:-steps])")
            if len(values) <= n:
                raise SeqlabError(f"data has {len(values)} values; scoring forecasts its last {n} (the run's "
                                  f"held-out tail) from the values before them, so give more than {n}")
            return errors(self._continue(values[:-n], n, f"data without its last {n} values"), values[-n:])
        if split not in ("valid", "test"):
            raise SeqlabError(f"unknown split {split!r}; evaluate valid or test")
        truth = self.series.part(split)
        if not len(truth):
            raise SeqlabError(f"the {split} part of {self.run_dir} is empty; train with --set data.horizon=N "
                              "(the held-out tail) or a non-zero fraction for it in data.split")
        return errors(self.forecast(len(truth), split=split), truth)

    def plot(self, out: str | Path | None = None):
        """History, the forecast from the end of train + valid, and the held-out tail (without a tail, a forecast
        of a tenth of the series' length): a matplotlib Figure, also written to ``out`` when it is given (training
        writes ``RUN/plots/forecast.png``)."""
        from seqlab.views.viz import save_figure

        s = self.series
        steps = s.n_test or max(1, len(s.values) // 10)
        forecast = self.forecast(steps, split="test")
        title = f"{self.config.arch}: forecast of {steps} values"
        if s.n_test:
            m = errors(forecast, s.part("test"))
            title += f" (held-out RMSE {m['rmse']:.4g}, MAE {m['mae']:.4g})"
        fig = forecast_figure(s, forecast, title, s.start("test"))
        if out is not None:
            save_figure(fig, out)
        return fig

    def _repr_png_(self) -> bytes:
        from seqlab.views.viz import figure_png

        return figure_png(self.plot())


def forecast_figure(series: Series, forecast: np.ndarray, title: str, origin: int):
    """The series up to ``origin`` (train and valid shaded apart), the forecast after it, and the truth: a
    matplotlib Figure."""
    from seqlab.views.viz import new_figure

    fig = new_figure((9, 4))
    ax = fig.subplots()
    t = np.arange(len(series.values))
    ax.plot(t[:origin], series.values[:origin], lw=1, color="C0", label="history (train + valid)")
    if series.n_valid:
        ax.axvspan(series.start("valid"), origin, color="0.9", zorder=0, label="valid")
    joint = max(origin - 1, 0)  # truth and forecast start from the last value of the history
    if series.n_test:
        ax.plot(t[joint:], series.values[joint:], lw=1, color="C2", label="held-out truth")
    ax.plot(np.arange(joint, origin + len(forecast)), np.concatenate([series.values[joint:origin], forecast]),
            lw=1.5, color="C3", label="forecast")
    if series.dates:
        ticks = np.linspace(0, len(series.dates) - 1, 6).round().astype(int)
        ax.set_xticks(ticks, [series.dates[i] for i in ticks], rotation=20, fontsize=8)
    else:
        ax.set_xlabel("position in the series")
    ax.set_ylabel(series.name)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def load(run_dir: Path, cfg: RunConfig, device: str | torch.device | None = None, weights: Path | None = None) -> Forecaster:
    run_dir = Path(run_dir)
    series = load_series(run_dir)
    if cfg.arch == "ar":
        return Forecaster(run_dir, cfg, series, load_ar(run_dir), torch.device("cpu"))
    device = inference_device(device)
    model = build_forecaster(cfg.model)
    checkpoint.load_model(model, (weights or run_dir) / "model.safetensors")
    model.to(device).eval()
    return Forecaster(run_dir, cfg, series, model, device)
