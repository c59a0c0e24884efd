"""Univariate time series from CSV files, and the held-out tail used to evaluate forecasts.

The files in ../shared/data/timeseries look like this (quoted header, quoted dates, bare numbers):

    "Date","Temp"
    "1981-01-01",20.7

``read_series`` picks one column of values (by name or 0-based index; by default the last column
whose first data row holds a number) and optionally a column of date labels. A header is optional:
when every cell of the first row is a number, the file has none and columns are picked by index.
A missing or non-numeric value is an error naming ``file:line`` and the value, never a silent NaN.
"""

from __future__ import annotations

import csv
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from seqlab.base.errors import SeqlabError
from seqlab.data import download

# the named series (data.source = NAME, read_series(NAME)): the downloadable datasets whose file is a series
SERIES_DATASETS = tuple(name for name, d in download.DATASETS.items() if d.main.startswith("timeseries/"))


def series_file(source: str | os.PathLike) -> Path:
    """The CSV file of ``source``: a named series (:data:`SERIES_DATASETS`, downloaded into the cache when
    missing) or a path."""
    name = os.fspath(source)
    return download.main_file(name) if name in SERIES_DATASETS else Path(name)


def _number(cell: str) -> float | None:
    """The cell as a finite float, or None when it is not one."""
    try:
        value = float(cell)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _read_rows(path: Path) -> list[tuple[int, list[str]]]:
    """(line number, cells) for every non-blank record; line numbers are 1-based file lines."""
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            reader = csv.reader(f, strict=True)  # a stray quote is an error, not a merged field
            rows = []
            for cells in reader:
                if not cells or (len(cells) == 1 and not cells[0].strip()):
                    continue  # blank line
                rows.append((reader.line_num, cells))
    except FileNotFoundError:
        raise SeqlabError(f"{path}: no such file; check the path to the CSV series") from None
    except IsADirectoryError:
        raise SeqlabError(f"{path} is a folder; pass the path of a CSV file") from None
    except OSError as exc:  # permissions, a name too long, ...
        raise SeqlabError(f"{path}: cannot read it ({exc.strerror or exc}); check the path and its permissions") from None
    except UnicodeDecodeError as exc:
        raise SeqlabError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); save the CSV as UTF-8") from None
    except csv.Error as exc:
        raise SeqlabError(f"{path}:{reader.line_num}: malformed CSV ({exc}); fix the quoting on that line") from None
    return rows


def _column_index(spec: int | str, names: list[str] | None, n_cols: int, path: Path, what: str) -> int:
    """Resolve a column given by header name or 0-based index (negative counts from the end)."""
    if isinstance(spec, str) and names is not None and spec in names:
        return names.index(spec)
    if isinstance(spec, str) and re.fullmatch(r"-?[0-9]{1,9}", spec):  # ASCII digits only: int() refuses "--1", "²"
        spec = int(spec)
    if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool) and -n_cols <= spec < n_cols:
        return int(spec) % n_cols
    listing = ", ".join(f"{i}={n!r}" for i, n in enumerate(names)) if names else f"indices 0..{n_cols - 1}"
    raise SeqlabError(f"{path}: no {what} {spec!r}; the columns are {listing}")


def read_series(
    path: str | os.PathLike,
    column: int | str | None = None,
    date_column: int | str | None = None,
) -> tuple[np.ndarray, list[str] | None]:
    """Read one numeric column of a CSV file, or of a named series (``"daily-min-temperatures"``,
    ``"airline-passengers"``, ``"daily-total-female-births"``: :func:`series_file`).

    Returns ``(values, dates)``: values as float64 of shape (n,), in file order; dates as the
    strings of ``date_column`` (None when no date column is asked for).
    """
    column = read_column(path, column, date_column)
    return column.values, column.dates


@dataclass(frozen=True, eq=False)
class SeriesColumn:
    """One column of a CSV series, as :func:`read_column` returns it."""

    values: np.ndarray  # (n,) float64, in file order
    dates: list[str] | None  # the date column's strings, one per value (None without a date column)
    name: str  # the column's header, or its 0-based index as text when the file has no header


def read_column(
    path: str | os.PathLike,
    column: int | str | None = None,
    date_column: int | str | None = None,
) -> SeriesColumn:
    """:func:`read_series`, also naming the column it read (for plots and logs)."""
    path = series_file(path)
    rows = _read_rows(path)
    if not rows:
        raise SeqlabError(f"{path}: the file has no rows; pass a CSV with a column of numbers")
    first_line, first = rows[0]
    has_header = not all(_number(c.strip()) is not None for c in first)
    names = [c.strip() for c in first] if has_header else None
    data = rows[1:] if has_header else rows
    if not data:
        raise SeqlabError(f"{path}: the file has a header but no data rows; add the values below the header")
    n_cols = len(first)
    if column is None:
        numeric = [i for i, c in enumerate(data[0][1][:n_cols]) if _number(c.strip()) is not None]  # named columns
        if not numeric:
            raise SeqlabError(
                f"{path}:{data[0][0]}: no column holds a number; pass column= (name or index) of the values"
            )
        value_col = numeric[-1]
    else:
        value_col = _column_index(column, names, n_cols, path, "column")
    date_col = None if date_column is None else _column_index(date_column, names, n_cols, path, "date column")
    label = repr(names[value_col]) if names else str(value_col)
    date_label = None if date_col is None else (repr(names[date_col]) if names else str(date_col))

    values = np.empty(len(data))
    dates: list[str] | None = None if date_col is None else []
    for i, (line, cells) in enumerate(data):
        cell = cells[value_col].strip() if value_col < len(cells) else ""
        if not cell:
            raise SeqlabError(f"{path}:{line}: missing value in column {label}; fill it in or remove the row")
        value = _number(cell)
        if value is None:
            raise SeqlabError(
                f"{path}:{line}: value {cell!r} in column {label} is not a finite number; fix or remove the row"
            )
        values[i] = value
        if dates is not None:
            date = cells[date_col].strip() if date_col < len(cells) else ""
            if not date:
                raise SeqlabError(f"{path}:{line}: missing date in column {date_label}; fill it in or remove the row")
            dates.append(date)
    return SeriesColumn(values, dates, names[value_col] if names else str(value_col))


def split_tail(values: np.ndarray, n_test: int) -> tuple[np.ndarray, np.ndarray]:
    """Hold out the last ``n_test`` values: returns (history, held-out tail), contiguous, in order."""
    values = np.asarray(values)
    n = values.shape[0]
    if isinstance(n_test, bool) or not isinstance(n_test, (int, np.integer)) or not 1 <= n_test < n:
        raise SeqlabError(
            f"the held-out tail must be 1..{n - 1} values of a series of {n}, got {n_test!r}; pick a tail in that range"
        )
    return values[: n - n_test], values[n - n_test :]
