"""Forecasting (seed 004): AR(p) fitted in closed form, or a neural forecaster trained on the same windows.

Data. One univariate series from a CSV file (``data.source``, or ``data.train``), read by
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
  trained with the shared :class:`~seqlab.trainer.Trainer` on the windows whose target lies in train, on the
  series standardised with the train part's mean and standard deviation. Validation: the mean squared
  one-step error (standardised) of the windows whose target lies in valid (``loss``) and the RMSE of the
  recursive forecast of the valid part from the end of train (``rmse``, original units).
  ``train.precision = "auto"`` means fp32 here: a bf16 forecast carries only ~3 significant digits.

Forecasts are recursive. ``predict(steps=N)`` forecasts the N values after train + valid (the first of them
cover the held-out tail); ``evaluate("test")`` compares the forecast from the end of train + valid with the
tail, ``evaluate("valid")`` the forecast from the end of train with valid (for AR in-sample: its coefficients
saw valid): ``{"rmse": sqrt(mean (f - x)^2), "mae": mean |f - x|}`` in the series' units. Training ends by
writing ``RUN/plots/forecast.png``: the history, the forecast of the tail and the tail itself.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from seqlab import checkpoint
from seqlab.config import RunConfig
from seqlab.data.series import read_column
from seqlab.errors import SeqlabError
from seqlab.io import read_json, versions, write_text_atomic
from seqlab.models.autoregressive import AR, ARConfig, FittedAR
from seqlab.models.forecaster import FORECASTER_CONFIGS, build_forecaster, recursive_forecast, window_matrix
from seqlab.devices import Dist, resolve_device
from seqlab.trainer import TRAINER_KEYS, Trainer, shard_rows

MODEL_CONFIGS = {"ar": ARConfig, **FORECASTER_CONFIGS}
# The train.* keys used, per model.arch: AR(p) is fitted in closed form (no Trainer); the neural forecasters
# use the Trainer's keys but eval_batches (validation always scores the whole valid part).
TRAIN_KEYS = {"ar": ("progress",),
              **dict.fromkeys(FORECASTER_CONFIGS, tuple(k for k in TRAINER_KEYS if k != "eval_batches"))}
SPLITS = ("train", "valid", "test")
SERIES_FILE = "series.json"
SERIES_FORMAT = 1  # format_version of series.json
EVAL_BATCH = 1024  # windows per validation forward pass


# ------------------------------------------------------------------------------------------------------
# the series and its parts


@dataclass(frozen=True, eq=False)
class Series:
    """A series cut into train, valid and test (contiguous, in time order), with the train part's statistics."""

    values: np.ndarray  # (n,) float64: train, then valid, then test
    dates: list[str] | None  # the date column's labels, one per value (None without data.date_column)
    n_train: int  # values in the train part
    n_valid: int  # values in the valid part
    n_test: int  # values in the held-out tail
    name: str  # what the values are: the column's header (its index as text without a header)
    mean: float  # mean of the train part (neural forecasters standardise with it)
    std: float  # standard deviation of the train part (population, ddof 0)

    def start(self, split: str) -> int:
        """Position of the first value of a split; the values before it are the forecast's history."""
        return {"train": 0, "valid": self.n_train, "test": self.n_train + self.n_valid}[split]

    def part(self, split: str) -> np.ndarray:
        n = {"train": self.n_train, "valid": self.n_valid, "test": self.n_test}[split]
        return self.values[self.start(split):self.start(split) + n]

    @property
    def history(self) -> np.ndarray:
        """Everything before the held-out tail (train + valid): what AR is fitted on, where predict starts."""
        return self.values[:self.start("test")]

    def standardised(self) -> np.ndarray:
        return (self.values - self.mean) / self.std

    def to_dict(self) -> dict:
        return {"format_version": SERIES_FORMAT, "name": self.name, "n_train": self.n_train, "n_valid": self.n_valid,
                "n_test": self.n_test, "mean": self.mean, "std": self.std, "values": self.values.tolist(),
                "dates": self.dates}


def _data_options(cfg: RunConfig) -> tuple[str | None, str | None, int]:
    """(column, date column, horizon); read with defaults so configs without these keys keep working."""
    d = cfg.data
    column, date_column, horizon = getattr(d, "column", ""), getattr(d, "date_column", ""), getattr(d, "horizon", 0)
    if isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 0:
        raise SeqlabError(f"data.horizon must be a whole number >= 0 (0 = the test fraction of data.split), "
                          f"got {horizon!r}")
    return _column_spec(column), _column_spec(date_column), horizon


def _column_spec(value: object) -> str | None:
    """A column as read_series takes it: None for "" (not given), else text (an index may come as an int)."""
    return None if value is None or value == "" else str(value)


def read_splits(cfg: RunConfig) -> Series:
    """Read the configured CSV series and cut it into train, valid and test (module docstring)."""
    d = cfg.data
    if d.valid or d.test:
        raise SeqlabError("data.valid / data.test are not used for forecasting: valid and the held-out tail are "
                          "cut from the end of the one series; set data.horizon=N (and data.split) instead")
    path = d.train or d.source
    if not path or not Path(path).is_file():
        raise SeqlabError(f"data.source {path!r} is not a CSV file; forecasting reads a series: "
                          "--set data.source=PATH.csv (one column of numbers, optionally a header and dates)")
    column, date_column, horizon = _data_options(cfg)
    col = read_column(path, column=column, date_column=date_column)
    values, dates = col.values, col.dates
    n = len(values)
    f_train, f_valid, _ = d.split
    a, b = round(n * f_train), round(n * (f_train + f_valid))
    n_test = horizon if horizon else n - b
    n_valid = round(n * f_valid) if horizon else b - a
    n_train = n - n_valid - n_test
    if n_train < 2:
        raise SeqlabError(f"{path}: the series has {n} values, too few for a held-out tail of {n_test} and a valid "
                          f"part of {n_valid} with 2 or more left to train on; use a longer series, a smaller "
                          "data.horizon or other data.split fractions")
    train = values[:n_train]
    mean, std = float(train.mean()), float(train.std())
    if std == 0.0:
        raise SeqlabError(f"{path}: the series is constant over its train part (every value is {train[0]!r}); "
                          "forecasting needs a series that varies")
    return Series(values, dates, n_train, n_valid, n_test, col.name, mean, std)


def save_series(series: Series, run_dir: Path) -> None:
    write_text_atomic(run_dir / SERIES_FILE, json.dumps(series.to_dict()) + "\n")


def load_series(run_dir: Path) -> Series:
    path = Path(run_dir) / SERIES_FILE
    doc = read_json(path, "series", "train the run again with `seqlab train`", expect=dict)
    version = doc.get("format_version")
    if version != SERIES_FORMAT:
        raise SeqlabError(f"{path} has format_version {version!r}, this seqlab reads {SERIES_FORMAT}; "
                          "use the seqlab version that wrote it")
    try:
        return Series(np.asarray(doc["values"], dtype=np.float64), doc["dates"], int(doc["n_train"]),
                      int(doc["n_valid"]), int(doc["n_test"]), str(doc["name"]), float(doc["mean"]), float(doc["std"]))
    except (KeyError, TypeError, ValueError) as e:
        raise SeqlabError(f"{path} is missing or has a bad field ({e}); the run directory is damaged") from None


# ------------------------------------------------------------------------------------------------------
# AR(p): a closed-form fit stored as a checkpoint


class ARWeights(nn.Module):
    """A FittedAR's arrays as float64 buffers, so an AR run has a ``model.safetensors`` like every run."""

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
    return FittedAR(params=weights.params.numpy(), last=weights.last.numpy(),
                    **{k: (int(v) if k in ("p", "nobs") else float(v)) for k, v in fields.items() if k in AR_FIELDS})


# ------------------------------------------------------------------------------------------------------
# neural forecasters: the training task


class ForecastTask:
    """Plugs a neural forecaster into :class:`seqlab.trainer.Trainer`: one example = one window and its target."""

    def __init__(self, model: nn.Module, series: Series):
        self.model, self.series = model, series
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
        forecast = forecast_neural(model, self.series, "valid", self.series.n_valid, device)
        return {"loss": total / len(self.Yv), **errors(forecast, self.series.part("valid"))}


def forecast_neural(model: nn.Module, series: Series, split: str, steps: int, device: torch.device) -> np.ndarray:
    """Recursive forecasts of ``steps`` values from the start of ``split``, in the series' units."""
    z = torch.from_numpy(series.standardised()[:series.start(split)].astype(np.float32)).to(device)  # seq
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
        load(run_dir, cfg, device="cpu").plot()
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
    model = build_forecaster(cfg.model)
    task = ForecastTask(model, series)
    train_cfg = cfg.train if cfg.train.precision != "auto" else dataclasses.replace(cfg.train, precision="fp32")
    trainer = Trainer(task, train_cfg, run_dir, dist=dist, log=log)
    n_params = sum(p.numel() for p in model.parameters())
    log(f"{cfg.arch} forecaster: {n_params:,} parameters; {task.train_tokens:,} training windows of "
        f"{cfg.model.max_len} values")
    return trainer.run(resume)


# ------------------------------------------------------------------------------------------------------
# a trained forecaster


class Forecaster:
    """A trained forecaster loaded from a run directory: ``forecast``, ``predict``, ``evaluate``, ``plot``.

    ``model`` is the :class:`~seqlab.models.autoregressive.FittedAR` (arch ``ar``) or the neural forecaster.
    """

    def __init__(self, run_dir: Path, cfg: RunConfig, series: Series, model: FittedAR | nn.Module,
                 device: torch.device):
        self.run_dir, self.config, self.series, self.model, self.device = run_dir, cfg, series, model, device

    def forecast(self, steps: int, split: str = "test") -> np.ndarray:
        """Recursive forecasts of the ``steps`` values from the start of ``split`` (history: all values before it)."""
        if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
            raise SeqlabError(f"--steps must be a whole number >= 1, got {steps!r}; ask for 1 or more forecasts")
        if split not in SPLITS:
            raise SeqlabError(f"unknown split {split!r}; valid splits: {', '.join(SPLITS)}")
        origin = self.series.start(split)
        if isinstance(self.model, FittedAR):
            p = self.model.p
            if origin < p:
                raise SeqlabError(f"AR({p}) needs {p} values before the {split} part, which has {origin}")
            # from the end of train + valid this is exactly the fit's own forecast (its `last` values)
            fitted = dataclasses.replace(self.model, last=self.series.values[origin - p:origin].copy())
            return fitted.forecast(int(steps))
        return forecast_neural(self.model, self.series, split, int(steps), self.device)

    def predict(self, lines: list[str] | None = None, steps: int | None = None, beam: int | None = None) -> list[float]:
        """The ``steps`` forecasts after the end of train + valid (the first ones cover the held-out tail)."""
        if beam is not None:
            raise SeqlabError("--beam is for translation; a forecast takes --steps N only")
        if lines is not None or steps is None:
            raise SeqlabError("forecasting reads no input lines; give the number of values to forecast: "
                              "`seqlab predict RUN --steps N`")
        return [float(v) for v in self.forecast(steps, "test")]

    def format_prediction(self, value: float) -> str:
        return repr(float(value))  # round-trips exactly

    def evaluate(self, split: str = "test") -> dict[str, float]:
        """RMSE and MAE of the recursive forecast of ``split`` (test: the held-out tail; valid)."""
        if split not in ("valid", "test"):
            raise SeqlabError(f"unknown split {split!r}; evaluate valid or test")
        truth = self.series.part(split)
        if not len(truth):
            raise SeqlabError(f"the {split} part of {self.run_dir} is empty; train with --set data.horizon=N "
                              "(the held-out tail) or a non-zero fraction for it in data.split")
        return errors(self.forecast(len(truth), split), truth)

    def plot(self, out: str | Path | None = None) -> Path:
        """History, the forecast from the end of train + valid, and the held-out tail (default
        ``RUN/plots/forecast.png``); without a tail, a forecast of a tenth of the series' length."""
        s = self.series
        origin = s.start("test")
        steps = s.n_test or max(1, len(s.values) // 10)
        forecast = self.forecast(steps, "test")
        title = f"{self.config.arch}: forecast of {steps} values"
        if s.n_test:
            m = errors(forecast, s.part("test"))
            title += f" (held-out RMSE {m['rmse']:.4g}, MAE {m['mae']:.4g})"
        return plot_forecast(s, forecast, title, Path(out) if out else self.run_dir / "plots" / "forecast.png",
                             origin)


def plot_forecast(series: Series, forecast: np.ndarray, title: str, out: Path, origin: int) -> Path:
    """The series up to ``origin`` (train and valid shaded apart), the forecast after it, and the truth."""
    from seqlab.viz import pyplot, save_figure

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9, 4))
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
    return save_figure(fig, out)


def load(run_dir: Path, cfg: RunConfig, device: str | torch.device | None = None, weights: Path | None = None) -> Forecaster:
    run_dir = Path(run_dir)
    series = load_series(run_dir)
    if cfg.arch == "ar":
        return Forecaster(run_dir, cfg, series, load_ar(run_dir), torch.device("cpu"))
    device = resolve_device("auto") if device is None else torch.device(device)
    model = build_forecaster(cfg.model)
    checkpoint.load_model(model, (weights or run_dir) / "model.safetensors")
    model.to(device).eval()
    return Forecaster(run_dir, cfg, series, model, device)
