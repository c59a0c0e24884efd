"""Character-level word features (Lample et al. 2016; seqlab.nn.char_features, model.char_dim /
model.char_hidden_size): the character BiLSTM's [→h_m ; ←h_1] against torch.nn.LSTM on one word, padding
invariance, the batches of character ids, the config errors, a tiny BiLSTM-CRF tagger with character features
end to end (chars.json, reload, unknown characters, export refusal), and the ner-bilstm-crf preset."""

from __future__ import annotations

import json
import random

import pytest
import torch

from seqlab import api, tasks
from seqlab.base.errors import SeqlabError
from seqlab.models.tagger import TAGGER_CONFIGS, Tagger
from seqlab.nn.char_features import CharBiLSTM
from seqlab.tasks.char_inputs import CharBatch, CharRows, char_batch, encode_chars
from seqlab.text.vocab import Vocab

from seqlab.base.bounds import chain_bound
from helpers import write_conll

QUIET = {"log": lambda *a, **k: None}
TINY = {"d_model": 12, "hidden_size": 16, "n_layers": 1, "dropout": 0.0}
pytestmark = pytest.mark.usefixtures("one_thread")


# Two float64 evaluations of char_lstm's BiLSTM on one word (torch's LSTM, ours in a padded batch): <= 24 chained
# reductions (6 characters × 2 directions × input and hidden products) of length <= 12 (5 inputs + 7 hidden), terms
# <= 12 in absolute value (torch's U(±1/√7) weights, N(0, 1) character embeddings), an error carried through the
# remaining characters with a gain <= 7/√7 per step: 24·γ_12·12·2.65^6 = 1.3e-10 (Higham §3.1, §3.3). A padding
# leak or a wrong direction moves a feature by >= 1e-2.
CHAR_TOL = chain_bound(products=24, n=12, magnitude=12, dtype=torch.float64, gain=2.65**6)


def char_lstm(seed: int = 0) -> CharBiLSTM:
    torch.manual_seed(seed)
    return CharBiLSTM(n_chars=11, char_dim=5, char_hidden_size=7).double()  # sizes all different


# --- the character BiLSTM ---

def test_the_feature_is_the_last_forward_and_first_backward_state_of_torch_lstm_on_the_word():
    model = char_lstm()
    reference = torch.nn.LSTM(5, 7, batch_first=True, bidirectional=True).double()
    reference.load_state_dict(model.lstm.state_dict())
    words = [[3, 4, 5, 6], [7], [8, 9, 10, 2, 3, 4]]
    chars = torch.zeros(1, 4, 6, dtype=torch.long)  # batch, words, chars: 3 words and a padding word
    for w, word in enumerate(words):
        chars[0, w, :len(word)] = torch.tensor(word)
    features = model(chars)  # 1, 4, 14
    assert features.shape == (1, 4, 14) and model.out_size == 14
    for w, word in enumerate(words):
        with torch.no_grad():
            out, _ = reference(model.embed(torch.tensor([word])))  # 1, m, 2*7: [→h_j ; ←h_j] at each j
        expected = torch.cat([out[0, -1, :7], out[0, 0, 7:]])  # [→h_m ; ←h_1]
        torch.testing.assert_close(features[0, w], expected, atol=CHAR_TOL, rtol=0)
    assert torch.equal(features[0, 3], torch.zeros(14, dtype=torch.float64))  # a padding word: 0


def test_a_word_s_feature_does_not_depend_on_the_padding_of_other_words_or_sentences():
    model = char_lstm(seed=1)
    alone = model(torch.tensor([[[3, 5, 7]]]))[0, 0]  # 1 sentence, 1 word, 3 characters
    padded = torch.zeros(3, 5, 9, dtype=torch.long)  # batch, words, chars
    padded[1, 2, :3] = torch.tensor([3, 5, 7])  # the same word, in the middle of a padded batch
    padded[0, :4, :9] = torch.randint(1, 11, (4, 9))
    padded[1, 0, :2] = torch.tensor([4, 4])
    features = model(padded)
    assert features.shape == (3, 5, 14)
    torch.testing.assert_close(features[1, 2], alone, atol=CHAR_TOL, rtol=0)
    assert torch.equal(features[2], torch.zeros(5, 14, dtype=torch.float64))  # an all-padding sentence: no crash
    assert model(torch.zeros(2, 3, 4, dtype=torch.long)).abs().sum() == 0  # nothing but padding


def test_character_batches_put_each_word_s_characters_first_then_padding():
    chars = Vocab.build([list("abc")])  # a, b, c -> 4, 5, 6 (after the four specials)
    fields = [encode_chars(["ab", "c", "a"], chars), encode_chars(["cab"], chars)]
    assert fields[0] == {"chars": [4, 5, 6, 4], "char_lengths": [2, 1, 1]}
    rows = CharRows([f["chars"] for f in fields], [f["char_lengths"] for f in fields])
    expected = torch.tensor([[[4, 5, 0], [6, 0, 0], [4, 0, 0]],
                             [[6, 4, 5], [0, 0, 0], [0, 0, 0]]])  # batch, words, chars
    assert torch.equal(char_batch(rows, [0, 1]), expected)
    assert torch.equal(char_batch(rows, [1]), torch.tensor([[[6, 4, 5]]]))
    assert encode_chars(["aß"], chars)["chars"] == [4, Vocab.unk_id]  # a character never seen: <unk>


# --- configs and the model ---

def test_char_dim_and_char_hidden_size_go_together_and_widen_the_encoder_s_input():
    lstm = TAGGER_CONFIGS["lstm"]
    with pytest.raises(SeqlabError, match=r"^model\.char_dim=25 needs model\.char_hidden_size > 0"):
        lstm(char_dim=25)
    with pytest.raises(SeqlabError, match=r"^model\.char_hidden_size=25 needs model\.char_dim > 0"):
        lstm(char_hidden_size=25)
    with pytest.raises(SeqlabError, match=r"model\.char_dim=-1 must be 0"):
        lstm(char_dim=-1, char_hidden_size=4)
    with pytest.raises(SeqlabError, match=r"^model\.char_dim=8 needs model\.char_hidden_size"):  # via a run config
        tasks.from_dict({"task": {"kind": "tag"}, "model": {"arch": "lstm", "char_dim": 8}})
    with pytest.raises(SeqlabError, match=r"model\.char_dim=8: character features are for the recurrent taggers"):
        tasks.from_dict({"task": {"kind": "tag"}, "model": {"arch": "transformer", "char_dim": 8,
                                                              "char_hidden_size": 8}})
    cfg = lstm(vocab_size=30, n_labels=3, char_dim=6, char_hidden_size=5, **TINY)
    assert cfg.stack_config(bidirectional=True).input_size == 12 + 2 * 5  # d_model + 2*char_hidden_size
    model = Tagger(cfg, n_chars=20)
    assert model.encoder.rnn.weight_ih_l0.shape == (4 * 16, 22) and model.encoder.chars.embed.num_embeddings == 20
    with pytest.raises(ValueError, match="n_chars"):
        Tagger(cfg)
    ids, mask = torch.tensor([[5, 6, 7]]), torch.ones(1, 3, dtype=torch.bool)
    with pytest.raises(ValueError, match="give chars"):
        model(ids, mask)
    assert model(ids, mask, torch.tensor([[[4, 5], [6, 0], [7, 8]]])).shape == (1, 3, 3)
    plain = Tagger(lstm(vocab_size=30, n_labels=3, **TINY))  # off: the model and its keys are as before
    assert not any("chars" in key for key in plain.state_dict()) and plain.encoder.rnn.weight_ih_l0.shape[1] == 12
    with pytest.raises(ValueError, match="no character features"):
        plain(ids, mask, torch.ones(1, 3, 2, dtype=torch.long))


def test_the_bilstm_crf_preset_is_lample_s_with_25_dimensional_character_features():
    from seqlab.tasks.tag import build_model

    cfg = tasks.resolve("ner-bilstm-crf")
    assert (cfg.model.char_dim, cfg.model.char_hidden_size, cfg.model.crf, cfg.model.dropout) == (25, 25, True, 0.5)
    model = build_model(cfg, vocab_size=100, n_labels=9, n_chars=60)
    assert model.encoder.rnn.cfg.input_size == 100 + 50 and model.crf is not None
    assert tasks.resolve("ner-bilstm").model.char_dim == 0


# --- a tagger with character features, end to end ---

LOWER = ["the", "a", "runs", "sees", "big", "old", "and", "with", "near"]
UPPER = ["Paris", "Anna", "Bonn", "Kim", "Oslo", "Lima"]


def made_up(rng: random.Random, upper: bool) -> str:
    """A made-up word (seen about once, so <unk> as a word with data.min_freq = 2), a name when capitalised."""
    word = "".join(rng.choice("bdfgklmnprstvz") + rng.choice("aeiou") for _ in range(rng.randint(1, 3)))
    return word.capitalize() if upper else word


def sentence(rng: random.Random) -> list[tuple[str, str]]:
    """A capitalised word is a one-word entity (B-NAME), every other word is O. A third of the words are made
    up, names or not: as words they all read <unk>, so only their characters tell them apart."""
    words = [made_up(rng, rng.random() < 0.5) if rng.random() < 0.3 else rng.choice(UPPER if rng.random() < 0.3
                                                                                      else LOWER)
             for _ in range(rng.randint(2, 7))]
    return [(w, "B-NAME" if w[0].isupper() else "O") for w in words]


def test_a_char_crf_tagger_trains_predicts_evaluates_and_reloads(tmp_path):
    from seqlab.data.conll import read_conll
    from seqlab.exporters import export
    from seqlab.tasks.tag import Encoded, collate

    rng = random.Random(0)
    corpus = {split: write_conll(tmp_path / f"{split}.txt", [sentence(rng) for _ in range(n)])
              for split, n in (("train", 150), ("valid", 10), ("test", 20))}
    cfg = tasks.from_dict({
        "task": {"kind": "tag"},
        "data": {**corpus, "tokenizer": "word", "lowercase": True, "min_freq": 2},  # lowercased words, not chars
        "model": {"arch": "lstm", **TINY, "crf": True, "char_dim": 6, "char_hidden_size": 5},
        "train": {"max_steps": 100, "batch_size": 16, "lr": 2e-2, "warmup_steps": 2, "eval_every": 0,
                  "save_every": 0, "progress": False, "precision": "fp32", "device": "cpu", "threads": 1}})
    run = api.train_run(cfg, tmp_path / "run", **QUIET)
    saved = json.loads((run / "chars.json").read_text())["tokens"]
    train_chars = {c for s in read_conll(corpus["train"]) for word in s.tokens for c in word}  # "P", "A": case kept
    assert saved[:2] == ["<pad>", "<unk>"] and set(saved[4:]) == train_chars and len(saved) == 4 + len(train_chars)
    assert "paris" in json.loads((run / "vocab.json").read_text())["tokens"]
    assert (run / "data" / "train.chars.idx").exists() and (run / "data" / "train.char_lengths.idx").exists()
    tagger = api.load(run, device="cpu")
    assert tagger.chars == Vocab(saved) and tagger.model.encoder.chars.embed.num_embeddings == len(saved)
    lines = ["the Paris sees Anna", "Kim", "a big Lima near the old Bonn", "Zürich runs"]  # ü: never seen
    results = tagger.predict(lines)
    for line, result in zip(lines, results):  # the Viterbi paths over the model's logits, words and characters
        tokens = line.split()
        fields = encode_chars(tokens, tagger.chars)
        batch = collate(Encoded([tagger.tokenizer.encode(t.lower() for t in tokens)], [[]],
                                chars=CharRows([fields["chars"]], [fields["char_lengths"]])), [0])
        assert isinstance(batch, CharBatch) and batch.chars.shape[:2] == batch.ids.shape
        with torch.no_grad():
            path = tagger.model.crf.decode(tagger.model(batch.ids, batch.mask, batch.chars), batch.mask)[0]
        assert result["tags"] == [tagger.labels.names[t] for t in path]
    assert results[0]["tags"] == ["O", "B-NAME", "O", "B-NAME"]
    unseen = tagger.predict(["the Tikamo sees Rulefa", "the tikamo sees rulefa"])  # <unk> words: the characters decide
    assert [r["tags"] for r in unseen] == [["O", "B-NAME", "O", "B-NAME"], ["O", "O", "O", "O"]]
    scores = tagger.evaluate("test")
    assert scores["f1"] > 0.9
    again = api.load(run, device="cpu")  # reloaded: the same characters, weights and predictions
    assert again.predict(lines) == results and again.evaluate("test") == scores
    assert again.tag(lines[0]) == list(zip(lines[0].split(), results[0]["tags"]))
    assert [(e.start, e.end) for e in again.entities(lines[0])] == [(1, 2), (3, 4)]
    for fmt in ("onnx", "hf"):
        with pytest.raises(SeqlabError, match=r"model\.char_dim = 6: its character features read each word's "
                                              r"characters.*export a tagger trained with model\.char_dim=0$"):
            export(run, fmt, tmp_path / f"out-{fmt}")
    assert not (tmp_path / "out-onnx").exists()
