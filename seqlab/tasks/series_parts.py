"""The series of a forecast run cut into its parts, train, valid and the held-out tail test (contiguous, in time
order), with the train part's statistics: read from the configured CSV once (:func:`read_splits`, the rules in
:mod:`seqlab.tasks.forecast`'s docstring) and kept in the run directory as ``series.json`` (floats exact), so a
trained run needs no CSV.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from seqlab.base.config import RunConfig
from seqlab.data.series import SERIES_DATASETS, read_column, series_file
from seqlab.base.errors import SeqlabError
from seqlab.base.io import read_json, write_text_atomic

SERIES_FILE = "series.json"
SERIES_FORMAT = 1  # format_version of series.json



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
    if not path or not series_file(path).is_file():
        raise SeqlabError(f"data.source {path!r} is not a CSV file nor a named series; forecasting reads a series: "
                          "--set data.source=PATH.csv (one column of numbers, optionally a header and dates) or "
                          f"one of {', '.join(SERIES_DATASETS)}")
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
