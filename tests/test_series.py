"""The CSV series reader, the held-out tail, and AR(p)'s refusal of bad input (one-line SeqlabError)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from seqlab.data.series import read_series, split_tail
from seqlab.base.errors import SeqlabError
from seqlab.models.autoregressive import AR, ARConfig, FittedAR, design_matrix, select_order

# file, value column, rows, first and last (date, value)
REAL = [
    ("airline-passengers.csv", "Passengers", 144, ("1949-01", 112.0), ("1960-12", 432.0)),
    ("daily-min-temperatures.csv", "Temp", 3650, ("1981-01-01", 20.7), ("1990-12-31", 13.0)),
    ("daily-total-female-births.csv", "Births", 365, ("1959-01-01", 35.0), ("1959-12-31", 50.0)),
]


@pytest.mark.parametrize(("name", "column", "n", "first", "last"), REAL)
def test_reads_the_real_csvs(shared_data, name, column, n, first, last):
    path = shared_data / "timeseries" / name
    values, dates = read_series(path, date_column="Date" if name != "airline-passengers.csv" else "Month")
    assert values.dtype == np.float64 and values.shape == (n,)
    assert (dates[0], values[0]) == first and (dates[-1], values[-1]) == last
    assert len(dates) == n
    # default column = the last numeric one; by name and by index give the same values; no dates unless asked
    for spec in (column, 1, "1", -1):
        again, no_dates = read_series(path, column=spec)
        assert np.array_equal(again, values) and no_dates is None


def test_real_csv_matches_a_plain_parse(shared_data):
    path = shared_data / "timeseries" / "daily-min-temperatures.csv"
    lines = path.read_text().splitlines()[1:]
    expected = np.array([float(line.split(",")[1]) for line in lines])
    values, dates = read_series(path, date_column=0)
    assert np.array_equal(values, expected)
    assert dates == [line.split(",")[0].strip('"') for line in lines]


def _write(tmp_path, text: str, name: str = "s.csv"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_headerless_bom_quotes_and_blank_lines(tmp_path):
    path = _write(tmp_path, '\ufeff1.5,"2"\n\n3,4e1\n  \n-5,6\n')
    values, _ = read_series(path)
    assert values.tolist() == [2.0, 40.0, 6.0]
    assert read_series(path, column=0)[0].tolist() == [1.5, 3.0, -5.0]
    with pytest.raises(SeqlabError, match="indices 0..1"):
        read_series(path, column="value")


def test_default_column_is_last_numeric(tmp_path):
    path = _write(tmp_path, '"id","x","note"\n1,2.5,a\n2,3.5,b\n')
    assert read_series(path)[0].tolist() == [2.5, 3.5]


BAD = [
    ('"Date","Temp"\n"1981-01-01",20.7\n"1981-01-02",\n', {}, ":3: missing value in column 'Temp'"),
    ('"Date","Temp"\n"1981-01-01",20.7\n"1981-01-02"\n', {}, ":3: missing value in column 'Temp'"),
    ('"Date","Temp"\n"1981-01-01",20.7\n\n"1981-01-03",?0.2\n', {}, ":4: value '\\?0.2' in column 'Temp' is not"),
    ('"Date","Temp"\n"1981-01-01",20.7\n"1981-01-02",nan\n', {}, ":3: value 'nan' in column 'Temp'"),
    ('"Date","Temp"\n"1981-01-01",20.7\n"1981-01-02",inf\n', {}, ":3: value 'inf'"),
    ('"Date","Temp"\n"1981-01-01",20.7\n', {"column": "Tmp"}, "no column 'Tmp'; the columns are 0='Date', 1='Temp'"),
    ('"Date","Temp"\n"1981-01-01",20.7\n', {"column": 2}, "no column 2"),
    ('"Date","Temp"\n"1981-01-01",20.7\n', {"date_column": "Day"}, "no date column 'Day'"),
    ('"Date","Temp"\n"1981-01-01",20.7\n,21.0\n', {"date_column": "Date"}, ":3: missing date in column 'Date'"),
    ('"Date","Temp"\n"a","b"\n', {}, ":2: no column holds a number"),
    ('"Date","Temp"\n', {}, "header but no data rows"),
    ("", {}, "the file has no rows"),
    ('"Date","Temp"\n"1981-01-01,20.7\n', {}, ":2: malformed CSV"),
]


@pytest.mark.parametrize(("text", "kwargs", "message"), BAD)
def test_bad_csv_is_one_line_error_naming_the_row(tmp_path, text, kwargs, message):
    path = _write(tmp_path, text)
    with pytest.raises(SeqlabError, match=message) as info:
        read_series(path, **kwargs)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


def test_missing_file_and_folder_and_encoding(tmp_path):
    with pytest.raises(SeqlabError, match="no such file"):
        read_series(tmp_path / "absent.csv")
    with pytest.raises(SeqlabError, match="is a folder"):
        read_series(tmp_path)
    path = tmp_path / "latin1.csv"
    path.write_bytes(b'"x"\n1\n\xe9\n')
    with pytest.raises(SeqlabError, match="not UTF-8"):
        read_series(path)


def test_split_tail():
    history, tail = split_tail(np.arange(10.0), 3)
    assert history.tolist() == list(range(7)) and tail.tolist() == [7.0, 8.0, 9.0]
    for bad in (0, 10, -1, 2.5, True):
        with pytest.raises(SeqlabError, match=r"1\.\.9 values"):
            split_tail(np.arange(10.0), bad)


def test_design_matrix_is_the_window_matrix_of_the_notes():
    # seed 004: X rows t0 t1 t2 / t1 t2 t3 / ..., Y t3 t4 ...; here newest lag first, with the constant
    x = np.array([10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0])
    X, Y = design_matrix(x, 3)
    assert X.tolist() == [[1, 12, 11, 10], [1, 13, 12, 11], [1, 14, 13, 12], [1, 15, 14, 13]]
    assert Y.tolist() == [13, 14, 15, 16]
    X, Y = design_matrix(x, 1, hold_back=3)  # the common sample of order selection
    assert X.tolist() == [[1, 12], [1, 13], [1, 14], [1, 15]] and Y.tolist() == [13, 14, 15, 16]


NOISY = np.random.default_rng(0).normal(size=50).cumsum()


@pytest.mark.parametrize(
    ("series", "p", "message"),
    [
        ([3.0] * 40, 2, "the series is constant"),
        (NOISY[:5], 2, "has 5 values but AR\\(2\\) needs at least 6"),
        (NOISY[:19], 9, "needs at least 20"),
        (np.r_[NOISY[:10], np.nan, NOISY[10:]], 2, "NaN/infinite value\\(s\\), the first at position 10"),
        (np.r_[NOISY[:3], np.inf, NOISY[3:]], 2, "the first at position 3"),
        (NOISY.reshape(5, 10), 2, "must be 1-D"),
        (["a", "b", "c"], 1, "must be numbers"),
    ],
)
def test_ar_refuses_bad_series(series, p, message):
    with pytest.raises(SeqlabError, match=message) as info:
        AR(p).fit(series)
    assert "\n" not in str(info.value)


def test_exact_fit_has_no_likelihood():
    # x_t = 1 + x_{t-1} is reproduced with zero residuals: log(sigma2) would be -inf
    with pytest.raises(SeqlabError, match="reproduces the series exactly"):
        FittedAR.from_params(np.arange(20.0), 1, np.array([1.0, 1.0]))


@pytest.mark.parametrize("p", [0, -1, 2.5, True, "3"])
def test_ar_refuses_bad_order(p):
    with pytest.raises(SeqlabError, match="integer >= 1"):
        AR(p)
    with pytest.raises(SeqlabError, match="integer >= 1"):
        ARConfig(p=p)


def test_bad_config_forecast_and_selection_arguments(tmp_path):
    with pytest.raises(SeqlabError, match="model.ic must be one of aic, bic, hqic"):
        ARConfig(ic="fpe")
    with pytest.raises(SeqlabError, match="model.trend 'ct' is not supported"):
        ARConfig(trend="ct")
    with pytest.raises(SeqlabError, match="model.max_p must be an integer >= 0"):
        ARConfig(max_p=-1)
    with pytest.raises(SeqlabError, match="max_p must be an integer >= 1"):
        select_order(NOISY, 0)
    with pytest.raises(SeqlabError, match="needs at least 42"):
        select_order(NOISY[:41], 20)
    fitted = AR(2).fit(NOISY)
    for steps in (0, -3, 1.5):
        with pytest.raises(SeqlabError, match="steps must be an integer >= 1"):
            fitted.forecast(steps)
    with pytest.raises(SeqlabError, match="lr must be a positive number"):
        AR(2).fit_gradient(NOISY, lr=-1.0)
    with pytest.raises(SeqlabError, match="diverged"):
        AR(2).fit_gradient(NOISY, steps=200, lr=50.0)


def test_ar_accepts_lists_columns_and_pandas_like_input():
    column = NOISY.reshape(-1, 1)  # (n, 1), e.g. a one-column frame's values
    a, b = AR(2).fit(NOISY.tolist()), AR(2).fit(column)
    assert np.array_equal(a.params, b.params) and a.params.shape == (3,)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "not a valid AR model JSON"),
        ('{"model": "lstm"}', "not an AR model file"),
        ('{"model": "ar", "format_version": 99}', "format_version 99 is not known"),
        ('{"model": "ar", "format_version": 1, "p": 2}', "missing or has a bad field"),
    ],
)
def test_load_refuses_bad_files(tmp_path, content, message):
    path = tmp_path / "ar.json"
    path.write_text(content)
    with pytest.raises(SeqlabError, match=message):
        FittedAR.load(path)


def test_load_refuses_inconsistent_shapes(tmp_path):
    d = AR(2).fit(NOISY).to_dict()
    d["params"] = d["params"][:2]
    path = tmp_path / "ar.json"
    path.write_text(json.dumps(d))
    with pytest.raises(SeqlabError, match="AR\\(2\\) needs 3 finite params"):
        FittedAR.load(path)
    with pytest.raises(SeqlabError, match="AR model file not found"):
        FittedAR.load(tmp_path / "absent.json")
