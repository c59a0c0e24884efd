"""Every check of a comparing bench can fail (issue #58): each check function, handed a planted failure, stops the
bench (``BenchCheckFailed``, an AssertionError: a non-zero exit) before any section is written, and passes what it
should pass. Fabricated inputs only: no bench runs here. bench/generate.py's token check: test_bench_generate.py."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
_PATH = sys.path[:]  # put back after the imports: a bench script puts bench/ first, where bench/onnx.py would
sys.path.append(str(ROOT / "bench"))  # shadow the onnx package for every later test of this worker

from bench import bleu, common, dropout, scale, w2v_peer  # noqa: E402
import forecast  # noqa: E402
import lm_throughput  # noqa: E402
import serve  # noqa: E402
from bench import encoder  # noqa: E402  (last: it takes bench/ off sys.path)

sys.path[:] = _PATH

_spec = importlib.util.spec_from_file_location("bench_onnx", ROOT / "bench" / "onnx.py")  # beside the onnx package
onnx_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(onnx_bench)


def test_require_raises_an_assertion_and_note_line_marks_a_typed_note():
    common.require(True, "never")
    with pytest.raises(common.BenchCheckFailed, match="planted"):
        common.require(False, "planted")
    assert issubclass(common.BenchCheckFailed, AssertionError)
    assert common.note_line("") == ""
    assert "typed by whoever ran the bench, not measured): two threads" in common.note_line("two  threads")


# ---- lm_throughput: first-step losses ----------------------------------------------------------------------------

def candidates(precision: str) -> list:
    return [lm_throughput.Candidate(side, att, False, precision)
            for side, atts in lm_throughput.ATTENTION.items() for att in atts]


def test_lm_throughput_losses_that_disagree_fail_the_bench():
    shape = lm_throughput.Shape()
    cands = candidates("fp32")
    agree = {c.name: 4.2695 + 1e-7 * i for i, c in enumerate(cands)}
    assert "tolerance" in lm_throughput.require_losses_agree(cands, agree, shape)
    planted = {**agree, cands[-1].name: 4.2695 + 0.05}  # a mapping slip moves the loss by far more than rounding
    with pytest.raises(AssertionError, match="first-step losses disagree"):
        lm_throughput.require_losses_agree(cands, planted, shape)
    nan = {**agree, cands[0].name: float("nan")}
    with pytest.raises(AssertionError, match="disagree"):
        lm_throughput.require_losses_agree(cands, nan, shape)


def test_lm_throughput_tolerance_is_the_rounding_bound_it_states():
    shape = lm_throughput.Shape()
    fp32 = lm_throughput.loss_tolerance(shape, "fp32", 4.0)
    products, n = 11 * shape.layers + 3, 4 * shape.d_model
    assert fp32 == pytest.approx(2 * products * 6 * n ** 0.5 * 2.0 ** -24 * 4.0)
    assert fp32 < 1e-2 < lm_throughput.loss_tolerance(shape, "bf16", 4.0)  # bf16 rounds every product's inputs


# ---- onnx: outputs past the tolerance ----------------------------------------------------------------------------

def test_onnx_outputs_past_the_tolerance_fail_before_the_timing(monkeypatch):
    monkeypatch.setattr(onnx_bench, "interleaved", lambda *a, **k: pytest.fail("timed after a failed check"))
    jobs = [np.ones((2, 3), np.float32)]
    cands = {"seqlab (torch)": lambda job: job, "onnxruntime": lambda job: job * (1 + 1e-3)}
    with pytest.raises(AssertionError, match="outputs differ past the tolerance: LM"):
        onnx_bench.measure(cands, jobs, 6, 1, onnx_bench.relative_bound(4, 512), "LM")
    assert onnx_bench.relative_bound(1, 8) == pytest.approx(2 * 8 * 2.0 ** -24 / (1 - 8 * 2.0 ** -24))


# ---- bleu: a score mismatch is checked before the section --------------------------------------------------------

def test_bleu_a_score_mismatch_writes_no_section(monkeypatch):
    row = {"systems": 1, "pairs": 2, "medians": {}, "identical": False, "scores": [1.0], "signature": "s",
           "cache_s": None, "ratio": 1.0, "peer_best": "p", "seqlab_best": "s", "peer_value": 1.0}
    monkeypatch.setattr(bleu, "load_systems", lambda n: (["r"], {"a": ["h"], "b": ["h"]}))
    monkeypatch.setattr(bleu, "measure", lambda ref, systems, rounds: {**row, "systems": len(systems)})
    monkeypatch.setattr(bleu, "write_section", lambda *a, **k: pytest.fail("a section was written"))
    monkeypatch.setattr(sys, "argv", ["bleu.py", "--systems", "2"])
    with pytest.raises(AssertionError, match="scores differ"):
        bleu.main()
    bleu.require_identical({**row, "identical": True})


# ---- dropout: output and keep rate -------------------------------------------------------------------------------

@pytest.mark.heavy
@pytest.mark.parametrize("compiled", [False, True])
def test_dropout_draws_of_both_sides_pass_their_checks(compiled):
    found = dropout.check_draws(0.1, torch.float32, compiled)  # compiled: as in the bench's compiled candidates
    assert set(found) == {"seqlab", "torch"}


def test_dropout_candidates_pair_each_side_eager_and_compiled():
    names = dropout.candidate_names(compile=True)
    assert len(names) == 6 and dropout.candidate_names(compile=False) == [n for n in names if n.endswith(", eager")]
    med = {n: 1.0 for n in names} | {"torch F.dropout, compiled": 3.0, "seqlab Dropout, compiled": 2.0}
    assert dropout.mode_ratios(med) == {"eager": 1.0, "compiled": 1.5}  # like against like only
    assert dropout.mode_ratios({n: 1.0 for n in names if n != "seqlab Dropout, compiled"}) == {"eager": 1.0}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_dropout_with_a_wrong_keep_rate_or_scale_fails(dtype):
    torch.manual_seed(0)
    x = (torch.rand(1 << 16, dtype=torch.float64) + 0.5).to(dtype)
    keep = torch.rand(x.shape) >= 0.1
    good = x * keep.to(dtype) * (1 / 0.9)
    dropout.check_dropout(x, good, 0.1, dtype)
    with pytest.raises(AssertionError, match="kept"):  # nothing dropped: the keep count is far off
        dropout.check_dropout(x, x / 0.9, 0.1, dtype)
    with pytest.raises(AssertionError, match=r"not x / \(1 - p\)"):  # dropped but not rescaled
        dropout.check_dropout(x, x * keep.to(dtype), 0.1, dtype)
    rate = x * (torch.rand(x.shape) >= 0.12).to(dtype) * (1 / 0.9)  # keeps 88 %, 34 standard deviations off
    with pytest.raises(AssertionError, match="binomial standard deviations"):
        dropout.check_dropout(x, rate, 0.1, dtype)


# ---- encoder: embeddings against the peer's torch backend --------------------------------------------------------

def test_encoder_rows_whose_embeddings_differ_fail_the_bench():
    reference = np.eye(3, 4, dtype=np.float32)
    close = reference + np.float32(1e-6)
    rows = [{"threads": 1, "agreement": encoder.check({"a": close, "b": reference}, reference)}]
    encoder.require_agreement(rows)
    turned = reference.copy()
    turned[1] = [0.0, 0.99, 0.14, 0.0]  # cosine 0.99 on one sentence
    rows.append({"threads": 2, "agreement": encoder.check({"ST onnx": turned}, reference)})
    with pytest.raises(common.BenchCheckFailed, match="2 thread.*ST onnx: min cosine 0.99"):
        encoder.require_agreement(rows)


# ---- serve: streaming against the library call ------------------------------------------------------------------

def test_serve_streaming_rounds_are_shuffled_pairs_and_their_texts_must_agree(monkeypatch):
    order, collected = [], []
    monkeypatch.setattr(common.gc, "collect", lambda: collected.append(len(order)))
    served = lambda: (order.append("served"), (100.0, "same text"))[1]  # noqa: E731
    direct = lambda: (order.append("direct"), "same text")[1]  # noqa: E731
    kept = serve.stream_rounds(served, direct, lambda text: len(text.split()), rounds=6)
    assert len(kept[0]) == len(kept[1]) == 6 and kept[0] == [100.0] * 6
    firsts = {order[i] for i in range(0, len(order), 2)}
    assert len(order) == 14 and firsts == {"served", "direct"}  # 7 rounds (1 warm-up), both orders seen
    assert collected == list(range(14))  # gc.collect() before every side
    with pytest.raises(AssertionError, match="the stream and seqlab generate differ"):
        serve.stream_rounds(lambda: (100.0, "one text"), lambda: "another text", len, rounds=1)


# ---- forecast: the timed fit's forecasts -------------------------------------------------------------------------

def test_forecast_the_timed_fits_must_agree():
    from seqlab.models.autoregressive import AR, ARConfig

    rng = np.random.default_rng(0)
    x = np.zeros(300)
    for t in range(2, 300):
        x[t] = 0.5 * x[t - 1] - 0.2 * x[t - 2] + rng.normal()
    fitted = AR(ARConfig(p=2)).fit(x)
    tol = forecast.forecast_tolerance(fitted, x, 10)
    assert 0 < tol < 1e-8
    ours = fitted.forecast(10)
    assert forecast.require_same_forecasts("s", 2, 2, ours, ours + tol / 2, tol) == pytest.approx(tol / 2)
    with pytest.raises(AssertionError, match="differ from statsmodels'"):
        forecast.require_same_forecasts("s", 2, 2, ours, ours + 1e-6, tol)
    with pytest.raises(AssertionError, match="chose p = 2, statsmodels' p = 3"):
        forecast.require_same_forecasts("s", 2, 3, ours, ours, tol)


# ---- scale: token counts, and no growth line at one size ---------------------------------------------------------

def test_scale_token_counts_past_their_tolerance_fail():
    scale.require_token_counts([(100.0, 24_005_241, 24_005_238)])  # a few pieces apart: the cuts' merges
    with pytest.raises(AssertionError, match="token counts differ"):
        scale.require_token_counts([(100.0, 24_005_241 - 6_700, 24_005_238)])  # one line lost


def lm_row(mb: float, peak: float) -> dict:
    side = {"tokens": 10, "seconds": 1.0, "rate": mb, "peak_tree_mib": peak}
    return {"mb": mb, "rounds": 1, "seqlab": side, "peer": dict(side), "ratio": 1.0,
            "verdict": {"seqlab_best": "s", "peer_best": "p"}}


def test_scale_growth_lines_need_two_sizes():
    one = scale.lm_lines([lm_row(100, 300)], result := {})
    assert not any("over" in line and "Peak RSS" in line for line in one)
    assert result["lm_peak_growth_from_100mb"] is None and result["target_lm_growth_le_1.3"] is None
    two = scale.lm_lines([lm_row(100, 300), lm_row(1000, 330)], result := {})
    assert any("at 1,000 MB over 100 MB: 1.10x" in line for line in two)


# ---- word2vec quality: two-sided, within a sampling spread --------------------------------------------------------

def test_w2v_quality_is_two_sided_and_fails_the_bench():
    gensim = [0.650, 0.660, 0.655]
    assert w2v_peer.within_spread([0.652, 0.658, 0.661], gensim) is True
    assert w2v_peer.within_spread([0.75, 0.76, 0.755], gensim) is False  # far better is as suspect as far worse
    assert w2v_peer.within_spread([0.55, 0.56, 0.555], gensim) is False
    assert w2v_peer.within_spread([0.66], [0.65]) is None  # one seed in all: no spread to judge by
    verdict = w2v_peer.quality_verdict({"s": [0.75, 0.76, 0.755], "g1": gensim, "g2": gensim}, "s", ["g1", "g2"])
    assert verdict is False
    w2v_peer.require_quality({"WordSim353": True, "SimLex-999": None}, "100 MB sgns")
    with pytest.raises(AssertionError, match="not within gensim's sampling spread .* on WordSim353"):
        w2v_peer.require_quality({"WordSim353": verdict}, "100 MB sgns")


def test_w2v_spread_limit_is_students_quantile_times_the_standard_error():
    from scipy.stats import t

    ours, peers = [1.0, 2.0], [1.0, 3.0]
    se = ((0.5 + 2.0) / 2 * (1 / 2 + 1 / 2)) ** 0.5
    assert w2v_peer.spread_limit(ours, peers) == pytest.approx(t.ppf(1 - w2v_peer.SPREAD_P / 2, 2) * se)
