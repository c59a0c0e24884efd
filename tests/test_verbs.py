"""The notebook verbs of the trained objects (issue #27): one verb per task, returning Python values, checked
against a direct computation (the model's logits, the decoder's hypotheses, the tagger's tags, the run's
standardisation) and against the split-based methods they share a code path with (``evaluate(data=...)`` on a
split's own items gives the split's scores). The tiny runs are conftest's ``serve_runs`` (one of each task,
trained once per session) and an AR run on a sine."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from seqlab.base.bounds import chain_bound, gamma, u
from seqlab import api
from seqlab.data.conll import read_conll
from seqlab.data.parallel import read_parallel
from seqlab.base.errors import SeqlabError
from seqlab.metrics.lm import score_stream
from seqlab.models.forecaster import recursive_forecast
from seqlab.tasks.results import EmbeddingMap, Entity, LMAttention, TokenScores, TranslationAttention
from seqlab.tasks.tag import spans

pytestmark = pytest.mark.usefixtures("one_thread")
PNG = b"\x89PNG\r\n\x1a\n"


def _load(serve_runs, name: str):
    return api.load(serve_runs[0] / name, device="cpu")


@pytest.fixture(scope="module")
def lm(serve_runs):
    return _load(serve_runs, "lm")


def _shows_inline(result) -> None:
    """A picture result: a matplotlib Figure from plot(), PNG bytes from _repr_png_() (what Jupyter shows)."""
    from matplotlib.figure import Figure

    assert isinstance(result.plot(), Figure)
    assert result._repr_png_().startswith(PNG)


# ---- language model --------------------------------------------------------------------------------------

# The lm-char run's model (2 layers, d_model 16, d_ff 32, vocabulary 32) in float64: two evaluations of it (one
# window or a batch of windows) give logits within <= 20 chained reductions of length <= 32, terms <= 85 (its
# nn.Linear products sum to <= 3.2) and a gain <= 200, as tests/test_parity_nn.py argues: 20·γ_32·85·200 = 1.2e-9.
LOGIT_TOL = chain_bound(products=20, n=32, magnitude=85, dtype=torch.float64, gain=200)


class _float64:
    """The lm's model in float64 inside the block (its float32 weights convert exactly, and back)."""

    def __init__(self, lm):
        self.model = lm.model

    def __enter__(self):
        self.model.double()

    def __exit__(self, *exc):
        self.model.float()


def _logprob_tol(logits: torch.Tensor) -> float:
    """score() casts the logits to float32 (u of |x| each) and takes a float32 log-softmax (γ_{V+2} of |x| + the
    log-sum-exp, Higham §3.1); a log-probability moves by <= 2·max|Δx| with its logits."""
    m, lse = logits.abs().max().item(), logits.logsumexp(-1).abs().max().item()
    return 2 * (LOGIT_TOL + 2 * u(torch.float32) * m) + gamma(logits.shape[-1] + 2, torch.float32) * (m + lse)

def test_score_is_the_models_log_probability_of_each_token_after_the_first(lm):
    text = "The cat sees a dog."
    ids = lm.tokenizer.encode(text)
    with _float64(lm), torch.no_grad():
        logits = lm.model(torch.tensor([ids]))
        logp = torch.log_softmax(logits.float(), dim=-1)[0]  # seq, vocab
        expected = logp[:-1].gather(-1, torch.tensor(ids[1:])[:, None])[:, 0].double().numpy()  # seq - 1
        got = lm.score(text)
        both = lm.score([text, "A dog runs."])
    assert isinstance(got, TokenScores)
    assert got.tokens == [lm.tokenizer.decode([i]) for i in ids[1:]]  # the first token has no context: not scored
    tol = _logprob_tol(logits)
    np.testing.assert_allclose(got.logprobs, expected, rtol=0, atol=tol)
    assert got.loss == pytest.approx(-expected.mean(), abs=tol + gamma(len(expected), np.float64) * abs(got.loss))
    # exp of the same mean on both sides: exp's rounding and the argument's (u|loss|)
    assert got.perplexity == pytest.approx(math.exp(got.loss), rel=gamma(2, np.float64) * (1 + got.loss))
    assert isinstance(both, list) and both[0] == got and len(both[1].tokens) == len("A dog runs.") - 1


def test_a_long_text_is_scored_in_the_windows_evaluate_uses(lm):
    text = "The big cat sees the old dog near a cat. " * 4  # 164 characters, max_len is 24
    ids = lm.tokenizer.encode(text)
    assert len(ids) > 3 * lm.model.cfg.max_len
    L = lm.model.cfg.max_len  # the second window: inputs ids[L:2L], targets ids[L+1:2L+1]
    with _float64(lm), torch.no_grad():
        got = lm.score(text)
        assert len(got.logprobs) == len(ids) - 1
        total, count = score_stream(lm.model, np.asarray(ids), L, 16, torch.device("cpu"))
        evaluated = lm.evaluate(data=text)
        logp = torch.log_softmax(lm.model(torch.tensor([ids[L:2 * L]])).float(), dim=-1)[0]
        per_token = max(_logprob_tol(lm.model(torch.tensor([ids[i:i + L]]))) for i in range(0, len(ids), L))
    # score_stream takes its log-softmax in float64: one float32 side per token, the sums' rounding (γ_count)
    tol = count * per_token + gamma(count, np.float64) * total
    assert -sum(got.logprobs) == pytest.approx(total, abs=tol) and count == len(ids) - 1
    assert evaluated["tokens"] == len(ids) - 1
    assert evaluated["loss"] == pytest.approx(got.loss, abs=tol / count)
    assert evaluated["perplexity"] == pytest.approx(got.perplexity, rel=2 * tol / count + gamma(2, np.float64) * 4)
    assert got.logprobs[L] == pytest.approx(float(logp[0, ids[L + 1]]), abs=per_token)


def test_score_refuses_a_text_with_nothing_to_score(lm):
    with pytest.raises(SeqlabError, match="text 2 has 1 token"):
        lm.score(["a cat", "a"])


def test_lm_evaluate_data_scores_texts_joined_by_newlines(lm):
    texts = ["The cat runs.", "A dog sees the cat."]
    with _float64(lm), torch.no_grad():
        evaluated, scored = lm.evaluate(data=texts), lm.score("\n".join(texts))
        ids, L = lm.tokenizer.encode("\n".join(texts)), lm.model.cfg.max_len
        tol = max(_logprob_tol(lm.model(torch.tensor([ids[i:i + L]]))) for i in range(0, len(ids), L))
    assert evaluated["loss"] == pytest.approx(scored.loss, abs=tol + gamma(len(ids), np.float64) * scored.loss)
    with pytest.raises(SeqlabError, match="data item 1"):
        lm.evaluate(data=["a cat", 5])


def test_lm_attention_unpacks_and_shows_inline(lm):
    result = lm.attention("the cat")
    tokens, layers = result
    assert isinstance(result, LMAttention) and tokens == list("the cat") and len(layers) == 2
    assert layers[0].shape == (2, 7, 7)
    _shows_inline(result)


# ---- translation -----------------------------------------------------------------------------------------

def test_translate_returns_the_best_hypothesis_text(serve_runs):
    tr = _load(serve_runs, "mt")
    hyps = tr.hypotheses(["the cat sees a dog", "", "a big dog"], beam=2)
    texts = [tr.tgt_tok.decode(h.tokens) for h in hyps]
    assert tr.translate(["the cat sees a dog", "", "a big dog"], beam=2) == texts and texts[1] == ""
    assert tr.translate("a big dog", beam=2) == texts[2]
    assert [r["translation"] for r in tr.predict(["the cat sees a dog"], beam=2)] == texts[:1]


def test_translation_attention_unpacks_and_shows_inline(serve_runs):
    tr = _load(serve_runs, "mt")
    result = tr.attention("the cat runs", beam=1)
    src, tgt, weights = result
    assert isinstance(result, TranslationAttention) and src == ["the", "cat", "runs", "<eos>"]
    assert weights.shape == (2, len(tgt), 4)
    _shows_inline(result)


def test_translate_evaluate_data_is_the_split_when_given_its_pairs(serve_runs):
    tr = _load(serve_runs, "mt")
    test = read_parallel(serve_runs[0].parent / "data" / "mt.test", "en", "de")
    pairs = list(zip(test.src, test.tgt))
    assert tr.evaluate(data=pairs, beam=2) == tr.evaluate("test", beam=2)
    with pytest.raises(SeqlabError, match="data item 0: the target is empty"):
        tr.evaluate(data=[("a cat", " ")])


# ---- tagging ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tagger(serve_runs):
    return _load(serve_runs, "ner")


def test_tag_pairs_tokens_with_tags_for_str_and_token_lists(tagger):
    one = tagger.tag("the cat sees Anna")
    assert [w for w, _ in one] == ["the", "cat", "sees", "Anna"]
    assert [t for _, t in one] == tagger.predict(["the cat sees Anna"])[0]["tags"]
    both = tagger.tag(["the cat sees Anna", ["Kim", "runs"]])
    assert both[0] == one and [w for w, _ in both[1]] == ["Kim", "runs"]
    assert both[1] == tagger.tag("Kim runs")
    with pytest.raises(SeqlabError, match="sentence 2 is empty"):
        tagger.tag(["Kim runs", " "])
    with pytest.raises(SeqlabError, match="sentence 1 is a int"):
        tagger.tag([3])


def test_spans_read_iob2_and_iobes_as_the_entity_metric_does():
    tokens = ["Anna", "Kim", "saw", "New", "York", "and", "Bonn", "today"]
    iob2 = ["B-PER", "I-PER", "O", "B-LOC", "I-LOC", "O", "B-LOC", "O"]
    iobes = ["B-PER", "E-PER", "O", "B-LOC", "E-LOC", "O", "S-LOC", "O"]
    expected = [Entity("PER", 0, 2, "Anna Kim"), Entity("LOC", 3, 5, "New York"), Entity("LOC", 6, 7, "Bonn")]
    assert spans(tokens, iob2) == expected and spans(tokens, iobes) == expected
    assert spans(["a", "b"], ["I-PER", "I-PER"]) == [Entity("PER", 0, 2, "a b")]  # an I- after O opens one


def test_entities_are_the_spans_of_the_predicted_tags(tagger):
    sentences = ["the cat sees Anna", "Kim runs near Oslo"]
    found = tagger.entities(sentences)
    for sentence, entities, pairs in zip(sentences, found, tagger.tag(sentences)):
        assert entities == spans([w for w, _ in pairs], [t for _, t in pairs])
    assert tagger.entities(sentences[0]) == found[0]
    assert any(e.type == "PER" and e.text == "Anna" for e in found[0])  # the tiny run learned the names


def test_tag_evaluate_data_is_the_split_when_given_its_sentences(tagger, serve_runs):
    test = read_conll(serve_runs[0].parent / "data" / "ner.test.txt")
    data = [list(zip(s.tokens, s.tags)) for s in test]
    assert tagger.evaluate(data=data) == tagger.evaluate("test")
    with pytest.raises(SeqlabError, match="data item 0: token 0's tag 'PER' is not a NER tag"):
        tagger.evaluate(data=[[("Anna", "PER")]])


# ---- classification --------------------------------------------------------------------------------------

def test_classify_gives_each_label_its_probability(serve_runs):
    classifier = _load(serve_runs, "sentiment")
    one = classifier.classify("the cat sees a dog")
    # float32 softmax (exp, sum, divide: γ_{C+2} each), its C values summed in float64
    assert list(one) == classifier.labels.names
    assert sum(one.values()) == pytest.approx(1.0, abs=gamma(2 * len(one) + 2, torch.float32))
    result = classifier.predict(["the cat sees a dog"])[0]
    assert one == result["probabilities"] and one[result["label"]] == result["probability"] == max(one.values())
    both = classifier.classify(["the cat sees a dog", "a big dog"])
    assert both[0] == one and both[1] == classifier.classify("a big dog")
    with pytest.raises(SeqlabError, match="text 2 is empty"):
        classifier.classify(["a dog", ""])


def test_classify_evaluate_data_is_the_split_when_given_its_pairs(serve_runs):
    classifier = _load(serve_runs, "sentiment")
    lines = (serve_runs[0].parent / "data" / "cls.test.tsv").read_text().splitlines()[1:]
    pairs = [tuple(line.split("\t")) for line in lines]
    assert classifier.evaluate(data=pairs) == classifier.evaluate("test")
    with pytest.raises(SeqlabError, match="data item 1"):
        classifier.evaluate(data=[("a dog", "pos"), "a cat"])


# ---- forecasting -----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ar_run(serve_runs, tmp_path_factory):
    """AR(3) on the sine serve_runs' forecaster learned (closed form: no training steps)."""
    return api.train_run("ar", tmp_path_factory.mktemp("ar") / "run", log=lambda *a, **k: None, overrides=[
        f"data.source={serve_runs[0].parent / 'data' / 'sine.csv'}", "model.max_p=0", "model.p=3"])


def test_neural_forecast_continues_a_new_history_in_the_runs_standardisation(serve_runs):
    fc = _load(serve_runs, "forecast")
    s = fc.series
    assert np.array_equal(fc.forecast(5, history=s.values[:s.start("test")]), fc.forecast(5, split="test"))
    history = 3.0 + 2.0 * np.cos(np.arange(30) / 3.0)  # another level and scale than the training series
    z = torch.from_numpy(((history - s.mean) / s.std).astype(np.float32))
    with torch.no_grad():
        expected = recursive_forecast(fc.model, z, 4).double().numpy() * s.std + s.mean
    # forecast_neural standardises the history as above and runs recursive_forecast: the same float32 operations
    # in the same order, so the same numbers on any machine
    np.testing.assert_array_equal(fc.forecast(4, history=history), expected)
    np.testing.assert_array_equal(fc.forecast(4, history=list(history)), expected)
    pd = pytest.importorskip("pandas")
    dated = pd.Series(history, index=pd.date_range("2024-01-01", periods=30, freq="D"))
    np.testing.assert_array_equal(fc.forecast(4, history=dated), expected)


def test_forecast_refuses_bad_histories(serve_runs):
    fc = _load(serve_runs, "forecast")
    with pytest.raises(SeqlabError, match=r"history item 1: nan is not a finite number"):
        fc.forecast(3, history=[1.0, float("nan"), 2.0])
    with pytest.raises(SeqlabError, match="history is the series to continue"):
        fc.forecast(3, "valid")
    with pytest.raises(SeqlabError, match="not both"):
        fc.forecast(3, history=[1.0, 2.0], split="valid")
    with pytest.raises(SeqlabError, match="steps must be a whole number"):
        fc.forecast(0)


def test_ar_forecast_continues_the_last_p_values_of_a_history(ar_run):
    fc = api.load(ar_run)
    history = np.linspace(-1.0, 1.0, 12)
    expected = dataclasses.replace(fc.model, last=history[-3:].copy()).forecast(6)
    assert np.array_equal(fc.forecast(6, history=history), expected)
    with pytest.raises(SeqlabError, match=r"AR\(3\) needs 3 values before history, which has 2"):
        fc.forecast(2, history=[0.5, 0.25])


@pytest.mark.parametrize("name", ["forecast", "ar"])
def test_forecast_evaluate_data_forecasts_its_last_part(name, serve_runs, ar_run):
    fc = api.load(ar_run) if name == "ar" else _load(serve_runs, name)
    values = fc.series.values
    assert fc.evaluate(data=values) == fc.evaluate("test")  # the same history, the same operations: equal
    with pytest.raises(SeqlabError, match=f"data has 3 values; scoring forecasts its last {fc.series.n_test}"):
        fc.evaluate(data=values[:3])


# ---- word vectors ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def emb(serve_runs):
    return _load(serve_runs, "w2v")


def test_embeddings_speak_gensims_keyedvectors(emb):
    kv = emb.vectors
    assert emb.most_similar("cat") == kv.most_similar("cat", topn=10) == emb.neighbors("cat")
    assert emb.most_similar(positive=["cat", "dog"], negative=["big"], topn=3) == \
        kv.most_similar(positive=["cat", "dog"], negative=["big"], topn=3) == emb.analogy("big", "cat", "dog", topn=3)
    assert emb.most_similar(negative="cat", topn=2) == kv.most_similar(negative=["cat"], topn=2)
    assert emb.similarity("cat", "dog") == kv.similarity("cat", "dog")
    assert emb.analogy("big", "cat", "dog", k=2) == emb.analogy("big", "cat", "dog", 2)  # the earlier name
    with pytest.raises(SeqlabError, match="two names for one number"):
        emb.analogy("big", "cat", "dog", topn=2, k=2)
    with pytest.raises(SeqlabError, match="topn must be a whole number >= 1"):
        emb.most_similar("cat", topn=0)
    with pytest.raises(SeqlabError, match=r"evaluate\(analogies=PATH, similarity=PATH\)"):
        emb.evaluate(data=[("a", "b", "c", "d")])


def test_embedding_map_unpacks_and_shows_inline(emb):
    result = emb.map(6, method="pca")
    words, coords = result
    assert isinstance(result, EmbeddingMap) and words == emb.vectors.words[:6] and coords.shape == (6, 2)
    x = emb.vectors.vectors[:6] / emb.vectors.norms[:6, None]
    x = (x - x.mean(axis=0)).astype(np.float64)  # PCA: the spread along the first axis is the largest
    # float64 SVD and products (γ_{N·D} relative, Higham §3.5 / backward-stable SVD), and the float32 centring leaves
    # column means <= γ_7 max|x| (float32), whose projection np.var removes: <= D (γ_7 max|x|)² apart
    want = np.linalg.svd(x, compute_uv=False)[0] ** 2 / 6
    tol = 2 * gamma(x.size, np.float64) * want + x.shape[1] * (gamma(7, np.float32) * np.abs(x).max()) ** 2
    assert np.var(coords[:, 0]) == pytest.approx(want, abs=tol)
    _shows_inline(result)
    with pytest.raises(SeqlabError, match="unknown map method 'umap'"):
        emb.map(method="umap")


# ---- the commands that draw these results ----------------------------------------------------------------

@pytest.mark.parametrize("name", ["lm", "mt"])
def test_cli_attention_draws_the_results_plot(name, serve_runs, tmp_path, capsys):
    from seqlab.cli import main

    out = tmp_path / "plots" / "attention.png"
    assert main(["attention", str(serve_runs[0] / name), "--text", "the cat", "--out", str(out),
                 "--device", "cpu"]) == 0
    assert capsys.readouterr().out.strip() == str(out) and out.read_bytes().startswith(PNG)


def test_cli_map_draws_the_words(serve_runs, tmp_path, capsys):
    pytest.importorskip("sklearn")
    from seqlab.cli import main

    out = tmp_path / "map.png"
    assert main(["map", str(serve_runs[0] / "w2v"), "--words", "8", "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out) and out.read_bytes().startswith(PNG)
