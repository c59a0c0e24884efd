"""The forecasting task: AR(p) and neural forecasters through seqlab.api, seqlab.load and the CLI.

AR: the run's forecasts equal ``FittedAR.forecast`` of a fit on train + valid (bit for bit), and eval's
RMSE/MAE equal a hand computation on the held-out tail of the daily female births. Neural: an LSTM, a GRU and
a Transformer encoder learn a noiseless sine within a few hundred steps (held-out RMSE < 0.05 on an amplitude
of 1). Bad input (constant series, too short, NaN, p < 1, no source) is one `error:` line and exit 2.
"""

from __future__ import annotations

import dataclasses
import json
import math
import tempfile

import numpy as np
import pytest
import torch

from seqlab import api
from seqlab.training import checkpoint
from seqlab.cli import main
from seqlab.base.config import DataConfig, RunConfig, TaskConfig
from seqlab.data.series import read_series
from seqlab.base.errors import SeqlabError, command_line
from seqlab.models.autoregressive import AR, ARConfig
from seqlab.models.forecaster import (
    LSTMForecasterConfig,
    TransformerForecasterConfig,
    build_forecaster,
    recursive_forecast,
    window_matrix,
)

FAST = ["train.progress=false", "train.threads=1"]  # one thread: fastest for models this small


@pytest.fixture(scope="module")
def births_csv(shared_data):
    return shared_data / "timeseries" / "daily-total-female-births.csv"


@pytest.fixture(scope="module")
def ar_run(births_csv, tmp_path_factory):
    """The `ar` preset (p by AIC up to 30) on the births, default split [0.9, 0.05, 0.05]."""
    return api.train_run("ar", tmp_path_factory.mktemp("ar") / "run", overrides=[f"data.source={births_csv}"],
                    log=lambda *a, **k: None)


def births_parts(births_csv):
    """The hand-made cut of the births (365 values): test = n - round(0.95 n), valid = round(0.95 n) - round(0.9 n)."""
    values = read_series(births_csv)[0]
    n = len(values)
    a, b = round(n * 0.9), round(n * 0.95)
    return values[:a], values[a:b], values[b:]


# ------------------------------------------------------------------------------------------------------
# AR end to end


def test_ar_run_forecasts_equal_fitted_ar(ar_run, births_csv):
    train, valid, test = births_parts(births_csv)
    assert (len(train), len(valid), len(test)) == (328, 19, 18)
    history = np.concatenate([train, valid])
    fitted = AR(ARConfig(max_p=30, ic="aic")).fit(history)
    forecaster = api.load(ar_run)
    assert forecaster.config.arch == "ar" and forecaster.model.p == fitted.p == 8
    np.testing.assert_array_equal(forecaster.model.params, fitted.params)  # bit for bit through safetensors
    assert forecaster.model.sigma2 == fitted.sigma2 and forecaster.model.aic == fitted.aic
    assert forecaster.predict(steps=25) == fitted.forecast(25).tolist()


def test_ar_eval_is_rmse_and_mae_of_the_tail(ar_run, births_csv):
    train, valid, test = births_parts(births_csv)
    fitted = AR(ARConfig(max_p=30)).fit(np.concatenate([train, valid]))
    f = fitted.forecast(len(test))
    rmse = math.sqrt(sum((a - b) ** 2 for a, b in zip(f, test)) / len(test))
    mae = sum(abs(a - b) for a, b in zip(f, test)) / len(test)
    got = api.load(ar_run).evaluate("test")
    assert set(got) == {"rmse", "mae"}
    assert got["rmse"] == pytest.approx(rmse, rel=1e-12) and got["mae"] == pytest.approx(mae, rel=1e-12)
    assert 5 < got["rmse"] < 10  # births: sd about 7 per day
    # valid: the forecast from the end of train, with the same coefficients
    f_valid = dataclasses.replace(fitted, last=train[-fitted.p:]).forecast(len(valid))
    assert api.load(ar_run).evaluate("valid")["rmse"] == pytest.approx(
        math.sqrt(np.mean((f_valid - valid) ** 2)), rel=1e-12)


def test_ar_run_directory(ar_run):
    png = ar_run / "plots" / "forecast.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    state = checkpoint.load_state(ar_run)  # format_version checked
    assert state["ar"]["p"] == 8 and state["format_version"] == checkpoint.FORMAT_VERSION
    series = json.loads((ar_run / "series.json").read_text())
    assert (series["n_train"], series["n_valid"], series["n_test"]) == (328, 19, 18)
    assert series["name"] == "Births" and series["dates"] is None  # the auto-picked column, named


def test_ar_resume_does_not_refit(ar_run):
    before = (ar_run / "model.safetensors").stat().st_mtime_ns
    logs = []
    api.train_run(api.read_run_config(ar_run), ar_run, resume=True, log=logs.append)
    assert (ar_run / "model.safetensors").stat().st_mtime_ns == before
    assert any("nothing to do" in line for line in logs)


def test_cli_predict_and_eval(ar_run, capsys):
    assert main(["predict", str(ar_run), "--steps", "4"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [float(x) for x in lines] == api.load(ar_run).predict(steps=4)
    assert lines == [repr(v) for v in api.load(ar_run).predict(steps=4)]  # repr-exact
    assert main(["eval", str(ar_run)]) == 0
    out = capsys.readouterr().out
    assert len(out.splitlines()) == 1 and json.loads(out) == api.load(ar_run).evaluate("test")


def test_cli_train_ar_with_fixed_p(births_csv, tmp_path, capsys):
    out = tmp_path / "ar9"
    assert main(["train", "ar", "--set", f"data.source={births_csv}", "--set", "model.p=9", "--set",
                 "model.max_p=0", "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    train, valid, _ = births_parts(births_csv)
    expected = AR(9).fit(np.concatenate([train, valid])).forecast(3)
    assert api.load(out).predict(steps=3) == expected.tolist()


def test_predict_needs_steps(ar_run):
    """In the caller's words: steps=N from Python, --steps N from the command line."""
    with pytest.raises(SeqlabError, match="steps=N$"):
        api.load(ar_run).predict(["1", "2"])
    with pytest.raises(SeqlabError, match="^steps must be a whole number"):
        api.load(ar_run).predict(steps=0)
    with pytest.raises(SeqlabError, match="^beam is for translation; a forecast takes steps=N only"):
        api.load(ar_run).predict(steps=3, beam=2)
    with command_line(), pytest.raises(SeqlabError, match="^--beam is for translation; a forecast takes --steps N"):
        api.load(ar_run).predict(steps=3, beam=2)


# ------------------------------------------------------------------------------------------------------
# data options: column, date column, held-out tail length


@dataclasses.dataclass(frozen=True)
class _Data(DataConfig):
    """DataConfig with the forecasting keys the lead adds (column, date_column, horizon)."""

    column: str = ""
    date_column: str = ""
    horizon: int = 0


def test_column_date_column_and_horizon(births_csv):
    from seqlab.tasks.forecast import read_splits

    data = _Data(source=str(births_csv), column="Births", date_column="Date", horizon=30)
    s = read_splits(RunConfig(task=TaskConfig("forecast"), data=data, model=ARConfig(), arch="ar"))
    assert (s.n_train, s.n_valid, s.n_test) == (365 - 18 - 30, 18, 30)  # valid: round(365 * 0.05)
    assert s.dates[0] == "1959-01-01" and s.dates[-1] == "1959-12-31" and s.name == "Births"
    assert s.part("test").tolist() == read_series(births_csv)[0][-30:].tolist()
    assert s.mean == pytest.approx(s.part("train").mean()) and s.std == pytest.approx(s.part("train").std())


# ------------------------------------------------------------------------------------------------------
# neural forecasters


def test_window_matrix_is_the_notes_table():
    """Seed 004: X rows t0 t1 t2 / t1 t2 t3 / ..., Y t3 t4 t5 t6."""
    t = np.arange(7.0)
    X, Y = window_matrix(t, 3, 3, 7)
    assert X.tolist() == [[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 5]] and Y.tolist() == [3, 4, 5, 6]


def test_recursive_forecast_feeds_forecasts_back():
    torch.manual_seed(0)
    model = build_forecaster(TransformerForecasterConfig(max_len=6, d_model=8, n_heads=2, d_ff=16)).eval()
    history = torch.randn(10)
    out = recursive_forecast(model, history, 3)
    window = history[-6:]
    for h in range(3):
        with torch.no_grad():
            step = model(window[None])[0]
        assert torch.equal(out[h], step)
        window = torch.cat([window[1:], step[None]])
    # a window shorter than max_len is allowed (right-aligned positions); a longer one is an error
    assert model(torch.randn(2, 4)).shape == (2,)
    with pytest.raises(SeqlabError, match="max_len"):
        model(torch.randn(2, 7))
    lstm = build_forecaster(LSTMForecasterConfig(max_len=6, hidden_size=8))
    assert lstm(torch.randn(3, 6)).shape == (3,)


@pytest.fixture(scope="module")
def sine_csv(tmp_path_factory):
    """A noiseless sine, period 20, 300 values (no header); 20 held out, 20 valid."""
    path = tmp_path_factory.mktemp("sine") / "sine.csv"
    path.write_text("".join(f"{math.sin(2 * math.pi * t / 20)!r}\n" for t in range(300)))
    return path


SINE_SPLIT = f"data.split=[{260 / 300!r}, {20 / 300!r}, {20 / 300!r}]"


@pytest.mark.parametrize("preset,extra", [
    ("forecast-lstm", ["model.hidden_size=32"]),
    ("forecast-lstm", ["model.arch=gru", "model.cell=gru", "model.hidden_size=32"]),
    ("forecast-transformer", []),
])
@pytest.mark.heavy
def test_neural_forecasters_learn_a_sine(preset, extra, sine_csv, tmp_path):
    run = api.train_run(preset, tmp_path / "run", log=lambda *a, **k: None,
                    overrides=[f"data.source={sine_csv}", SINE_SPLIT, "model.max_len=20", "train.max_steps=300",
                               "train.eval_every=0", "train.save_every=0", *FAST, *extra])
    f = api.load(run, device="cpu")
    m = f.evaluate("test")
    assert m["rmse"] < 0.05 and m["mae"] <= m["rmse"], m  # amplitude 1
    truth = np.sin(2 * np.pi * np.arange(280, 290) / 20)
    assert np.abs(np.asarray(f.predict(steps=10)) - truth).max() < 0.1
    assert (run / "plots" / "forecast.png").exists() and (run / "plots" / "loss.png").exists()
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert rows[-1]["split"] == "valid" and rows[-1]["rmse"] < 0.05


# ------------------------------------------------------------------------------------------------------
# bad input: one line, exit 2


def _csv(tmp_path, name, lines):
    path = tmp_path / name
    path.write_text("value\n" + "".join(f"{v}\n" for v in lines))
    return path


@pytest.mark.parametrize("case,sets,match", [
    ("constant", [], "constant"),
    ("short", ["model.p=9", "model.max_p=0"], "needs at least 20"),
    ("nan", [], ":5: value 'nan'"),
    ("p0", ["model.p=0"], "model.p must be an integer >= 1"),
    ("nosource", [], "not a CSV file"),
    ("neural-short", [], "fewer than model.max_len"),
])
def test_bad_input_is_one_line_exit_2(case, sets, match, tmp_path, capsys):
    preset, source = "ar", None
    if case == "constant":
        source = _csv(tmp_path, "c.csv", [5.0] * 40)
    elif case == "short":
        source = _csv(tmp_path, "s.csv", [1, 3, 2, 5, 4, 6, 5, 8, 7, 9, 8, 10])
    elif case == "nan":
        source = _csv(tmp_path, "n.csv", [1, 2, 3, "nan", 5, 6, 7, 8, 9, 10])
    elif case == "p0":
        source = _csv(tmp_path, "p.csv", range(40))
    elif case == "nosource":
        source = tmp_path / "missing.csv"
    else:
        preset, source = "forecast-lstm", _csv(tmp_path, "l.csv", np.sin(np.arange(30.0)))
    args = ["train", preset, "--set", f"data.source={source}", "--out", str(tmp_path / "run")]
    for s in sets:
        args += ["--set", s]
    assert main(args) == 2
    err = capsys.readouterr().err.splitlines()  # progress messages may come first, on stderr too
    errors = [line for line in err if line.startswith("error:")]
    assert len(errors) == 1 and err[-1] == errors[0] and match in errors[0], err


def test_valid_and_test_files_are_refused(births_csv, tmp_path):
    with pytest.raises(SeqlabError, match="data.horizon"):
        api.train_run("ar", tmp_path / "run", overrides=[f"data.train={births_csv}", f"data.test={births_csv}"],
                  log=lambda *a, **k: None)


# ------------------------------------------------------------------------------------------------------
# forecasting like the other tasks: in memory, after the end, a Figure, predict_next, named series


@pytest.fixture(scope="module")
def lstm_run(sine_csv, tmp_path_factory):
    """A small LSTM forecaster on the sine (a few steps: the verbs are checked, not the fit)."""
    return api.train_run("forecast-lstm", tmp_path_factory.mktemp("lstm") / "run", log=lambda *a, **k: None,
                         overrides=[f"data.source={sine_csv}", SINE_SPLIT, "model.max_len=20", "model.hidden_size=8",
                                    "train.max_steps=5", "train.eval_every=0", "train.save_every=0", *FAST])


def _listing(folder) -> dict:
    """Every file under ``folder`` with its size and modification time."""
    return {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("name", ["lstm", "ar"])
def test_history_forecast_is_in_memory_and_equals_the_file_based_one(name, lstm_run, ar_run, tmp_path,
                                                                     monkeypatch):
    from seqlab.data.in_memory import VALUE_COLUMN
    from seqlab.data.series import read_column
    from seqlab.tasks.splits import spooled

    fc = api.load(lstm_run if name == "lstm" else ar_run, device="cpu")
    history = fc.series.values[:-7] * 1.5 + 0.25
    with spooled("forecast", history, "series.csv", what="history") as path:  # how forecast(history=) read it
        expected = fc._continue(read_column(path, column=VALUE_COLUMN).values, 6, "history")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # where a temporary file would go
    (tmp_path / "tmp").mkdir()
    run_before, tmp_before = _listing(fc.run_dir), _listing(tmp_path)
    for given in (history, list(history), [int(v) if v.is_integer() else v for v in history]):
        np.testing.assert_array_equal(fc.forecast(6, history=given), expected)
    pd = pytest.importorskip("pandas")
    np.testing.assert_array_equal(fc.forecast(6, history=pd.Series(history)), expected)
    assert _listing(fc.run_dir) == run_before and _listing(tmp_path) == tmp_before
    with pytest.raises(SeqlabError, match=r"^history item 2: .*inf.* is not a finite number"):
        fc.forecast(2, history=np.array([1.0, 2.0, np.inf, 3.0]))
    with pytest.raises(SeqlabError, match=r"^history is empty"):
        fc.forecast(2, history=np.array([]))


@pytest.mark.parametrize("name", ["lstm", "ar"])
def test_forecast_continues_after_the_end_and_split_test_is_the_old_start(name, lstm_run, ar_run):
    fc = api.load(lstm_run if name == "lstm" else ar_run, device="cpu")
    s = fc.series
    assert s.n_test > 0
    np.testing.assert_array_equal(fc.forecast(5), fc.forecast(5, history=s.values))  # after the last value
    old = fc.forecast(5, history=s.values[:s.start("test")])  # where forecast(5) started before
    np.testing.assert_array_equal(fc.forecast(5, split="test"), old)
    assert fc.predict(steps=5) == old.tolist()
    if name == "ar":  # (the sine's period is its tail's length: the LSTM reads the same window at both ends)
        assert not np.array_equal(fc.forecast(5), old)
        fitted = dataclasses.replace(fc.model, last=s.values[-fc.model.p:].copy())
        assert np.array_equal(fc.forecast(5), fitted.forecast(5))
        assert np.array_equal(fc.forecast(5, split="test"), fc.model.forecast(5))  # the fit's own forecast
    with pytest.raises(SeqlabError, match="^unknown split 'end'"):
        fc.forecast(2, split="end")


def test_plot_returns_a_figure_and_writes_only_when_asked(ar_run, tmp_path):
    from matplotlib.figure import Figure

    fc = api.load(ar_run)
    before = _listing(ar_run)
    fig = fc.plot()
    assert isinstance(fig, Figure) and fig.axes and _listing(ar_run) == before
    assert fc._repr_png_()[:8] == b"\x89PNG\r\n\x1a\n" and _listing(ar_run) == before
    out = tmp_path / "plots" / "fc.png"
    assert isinstance(fc.plot(out), Figure)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and _listing(ar_run) == before


def test_predict_next_is_the_ar_formula_and_one_neural_forecast(lstm_run, ar_run):
    ar = api.load(ar_run)
    x = ar.series.values[:200]
    b, w = ar.model.params[0], ar.model.params[1:]  # x_hat = b + w_1 x_t + ... + w_p x_{t-p+1}
    assert ar.predict_next(x) == pytest.approx(b + sum(w[i] * x[-1 - i] for i in range(ar.model.p)), rel=1e-12)
    assert ar.predict_next(list(x)) == float(ar.forecast(1, history=x)[0])
    lstm = api.load(lstm_run, device="cpu")
    h = lstm.series.values[:100]
    assert isinstance(lstm.predict_next(h), float) and lstm.predict_next(h) == float(lstm.forecast(1, history=h)[0])
    with pytest.raises(SeqlabError, match=r"AR\(8\) needs 8 values before history, which has 2"):
        ar.predict_next([1.0, 2.0])


def test_named_series_resolve_as_data_sources(births_csv, shared_data, tmp_path, monkeypatch):
    from seqlab.data.download import DATASETS, link_cache

    monkeypatch.setenv("SEQLAB_CACHE", str(link_cache(shared_data, tmp_path / "cache")))  # offline: shared copies
    for name in ("daily-min-temperatures", "airline-passengers", "daily-total-female-births"):
        assert DATASETS[name].main == f"timeseries/{name}.csv" and "licence" in DATASETS[name].terms
    named = api.train_run("ar", tmp_path / "named", overrides=["data.source=daily-total-female-births", "model.max_p=0",
                          "model.p=3"], log=lambda *a, **k: None)
    path = api.train_run("ar", tmp_path / "path", overrides=[f"data.source={births_csv}", "model.max_p=0", "model.p=3"],
                         log=lambda *a, **k: None)
    assert np.array_equal(api.load(named).forecast(4), api.load(path).forecast(4))
    with pytest.raises(SeqlabError, match="nor a named series.*daily-min-temperatures"):
        api.train_run("ar", tmp_path / "bad", overrides=["data.source=daily-max-temperatures"],
                      log=lambda *a, **k: None)
