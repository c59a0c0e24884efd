"""Greedy and beam-search decoding (seqlab.decoding.beam) for both encoder-decoders and scripted distributions."""

from __future__ import annotations

import math

import pytest
import torch

from seqlab.decoding.beam import Stepper, beam_search, greedy_search, length_penalty, translate_ids
from seqlab.data.batching import pad_batch
from seqlab.base.errors import SeqlabError
from seqlab.models.seq2seq import Seq2SeqAttention, Seq2SeqConfig
from seqlab.models.transformer import EncoderDecoder, EncoderDecoderConfig

PAD, SOS, EOS, A, B = 0, 2, 3, 4, 5
SOURCES = [[5, 6, 7, EOS], [4, 5, 6, 7, 8, 9, 10, 11, EOS], [12, EOS], [6, 6, 8, 9, 4, EOS]]


pytestmark = pytest.mark.usefixtures("one_thread")


def half_trained(model, steps: int = 40):
    """A few steps on a reversal task, so that outputs end with <eos> at varied lengths (a random model
    either never stops or stops at once)."""
    g = torch.Generator().manual_seed(5)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(steps):
        seqs = [(torch.randint(7, (int(torch.randint(1, 8, (1,), generator=g)),), generator=g) + 4).tolist()
                for _ in range(16)]
        src, src_mask = pad_batch([s + [EOS] for s in seqs], PAD)
        tgt_in, tgt_mask = pad_batch([[SOS] + s[::-1] for s in seqs], PAD)
        tgt_out, _ = pad_batch([s[::-1] + [EOS] for s in seqs], PAD)
        loss = torch.nn.functional.cross_entropy(model(src, tgt_in, src_mask)[tgt_mask], tgt_out[tgt_mask])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval()


def tiny_transformer(seed=0) -> EncoderDecoder:
    torch.manual_seed(seed)
    cfg = EncoderDecoderConfig(src_vocab_size=13, tgt_vocab_size=11, n_layers=2, n_heads=2, d_model=8, d_ff=16,
                               max_len=24, dropout=0.0)
    return half_trained(EncoderDecoder(cfg).double())


def tiny_seq2seq(cell="gru", seed=0) -> Seq2SeqAttention:
    torch.manual_seed(seed)
    cfg = Seq2SeqConfig(src_vocab_size=13, tgt_vocab_size=11, cell=cell, n_layers=2, d_model=8, hidden_size=6,
                        attn_size=5, dropout=0.0, max_len=24)
    return half_trained(Seq2SeqAttention(cfg).double())


BUILDERS = {"transformer": tiny_transformer, "seq2seq-gru": tiny_seq2seq, "seq2seq-lstm": lambda: tiny_seq2seq("lstm")}


@pytest.fixture(scope="module")
def models():
    torch.set_num_threads(1)
    return {name: build() for name, build in BUILDERS.items()}


def search(model, sources, beam, **kw):
    ids, mask = pad_batch(sources, PAD)
    if beam == 0:
        return greedy_search(model, ids, mask, sos_id=SOS, eos_id=EOS, pad_id=PAD, **kw)
    return beam_search(model, ids, mask, beam=beam, sos_id=SOS, eos_id=EOS, pad_id=PAD, **kw)


# --- scripted distributions: the search itself ---

class Scripted(Stepper):
    """A 'model' whose next-token probabilities are a table keyed by the output prefix."""

    def __init__(self, table: dict[tuple, dict[int, float]], batch: int = 1, default=None, max_len: int = 50):
        self.table, self.default, self.max_len = table, default or {EOS: 1.0}, max_len
        self.prefixes: list[tuple] = [()] * batch
        self.calls = 0

    def logits(self, tokens):
        if self.calls:
            self.prefixes = [p + (t,) for p, t in zip(self.prefixes, tokens.tolist())]
        self.calls += 1
        out = torch.full((len(self.prefixes), 6), -1e9, dtype=torch.float64)
        for row, prefix in enumerate(self.prefixes):
            for token, p in self.table.get(prefix, self.default).items():
                out[row, token] = math.log(p)
        return out

    def select(self, rows):
        self.prefixes = [self.prefixes[r] for r in rows.tolist()]


TREE = {(): {A: 0.6, B: 0.4}, (A,): {A: 0.5, B: 0.3, EOS: 0.2}, (B,): {EOS: 0.9, A: 0.05, B: 0.05}}
SRC = torch.tensor([[7, EOS]]), torch.tensor([[True, True]])


def test_length_penalty_formula():
    assert length_penalty(1, 0.6) == 1.0  # ((5 + 1) / 6) ** a
    assert length_penalty(7, 0.6) == pytest.approx(2 ** 0.6, abs=1e-15)
    assert length_penalty(13, 1.0) == pytest.approx(3.0)
    assert length_penalty(40, 0.0) == 1.0


def test_beam_finds_what_greedy_misses_and_length_penalty_changes_the_winner():
    greedy = greedy_search(Scripted(TREE), *SRC, sos_id=SOS, eos_id=EOS)[0]
    assert greedy.tokens == [A, A] and greedy.log_prob == pytest.approx(math.log(0.3)) and greedy.finished
    best = beam_search(Scripted(TREE), *SRC, beam=2, sos_id=SOS, eos_id=EOS, alpha=0.0)[0]
    assert best.tokens == [B] and best.log_prob == pytest.approx(math.log(0.36)) and best.finished
    # a strong length penalty favours the longer hypothesis: log(.3)/lp(3) > log(.36)/lp(2) for alpha = 2
    long = beam_search(Scripted(TREE), *SRC, beam=2, sos_id=SOS, eos_id=EOS, alpha=2.0)[0]
    assert long.tokens == [A, A]
    assert long.score == pytest.approx(math.log(0.3) / length_penalty(3, 2.0))


def test_search_stops_at_eos_not_at_the_limit():
    table = {(): {A: 1.0}, (A,): {B: 0.9, EOS: 0.1}, (A, B): {EOS: 0.8, A: 0.2}}
    greedy_stepper = Scripted(table, default={A: 0.5, B: 0.5})
    hyp = greedy_search(greedy_stepper, *SRC, sos_id=SOS, eos_id=EOS, max_new=40)[0]
    assert hyp.tokens == [A, B] and hyp.finished and greedy_stepper.calls == 3
    beam_stepper = Scripted(table, default={A: 0.5, B: 0.5})
    hyp = beam_search(beam_stepper, *SRC, beam=2, sos_id=SOS, eos_id=EOS, alpha=0.0, max_new=40)[0]
    assert hyp.tokens == [A, B] and hyp.finished and beam_stepper.calls < 10


def test_search_stops_at_the_length_limit():
    for beam in (0, 1, 3):
        stepper = Scripted({}, default={A: 0.7, B: 0.3})
        hyp = search(stepper, [[7, EOS]], beam, max_new=4)[0]
        assert hyp.tokens == [A] * 4 and not hyp.finished and stepper.calls == 4
        assert hyp.log_prob == pytest.approx(4 * math.log(0.7))


def test_bad_arguments():
    with pytest.raises(SeqlabError, match="beam"):
        search(Scripted(TREE), [[7, EOS]], beam=-1)
    with pytest.raises(SeqlabError, match="length limit"):
        search(Scripted(TREE), [[7, EOS]], beam=2, max_new=51)


# --- real models ---

@pytest.mark.parametrize("name", list(BUILDERS))
def test_beam_size_one_equals_greedy(name, models):
    model = models[name]
    greedy = search(model, SOURCES, 0, alpha=0.6)
    beam1 = search(model, SOURCES, 1, alpha=0.6)
    assert [h.tokens for h in greedy] == [h.tokens for h in beam1]
    assert [h.finished for h in greedy] == [h.finished for h in beam1]
    for g, b in zip(greedy, beam1):
        assert g.log_prob == pytest.approx(b.log_prob, abs=1e-12) and g.score == pytest.approx(b.score, abs=1e-12)
    finished = sum(h.finished for h in greedy)
    assert 0 < finished, "the test model should finish some outputs with <eos>"


@pytest.mark.parametrize("name", list(BUILDERS))
@pytest.mark.parametrize("beam", [0, 3])
def test_batched_equals_one_by_one(name, beam, models):
    model = models[name]
    batched = search(model, SOURCES, beam)
    for source, hyp in zip(SOURCES, batched):
        alone = search(model, [source], beam)[0]
        assert alone.tokens == hyp.tokens and alone.finished == hyp.finished
        assert alone.score == pytest.approx(hyp.score, abs=1e-10)


@pytest.mark.parametrize("beam", [0, 3])
def test_transformer_cached_equals_uncached(beam, models):
    model = models["transformer"]
    cached = search(model, SOURCES, beam, use_cache=True)
    uncached = search(model, SOURCES, beam, use_cache=False)
    assert [h.tokens for h in cached] == [h.tokens for h in uncached]
    assert [h.score for h in cached] == pytest.approx([h.score for h in uncached], abs=1e-10)
    assert any(len(h.tokens) > 3 for h in cached)  # several cached steps were taken


def test_translate_ids_keeps_input_order(models):
    model = models["transformer"]
    hyps = translate_ids(model, SOURCES, sos_id=SOS, eos_id=EOS, pad_id=PAD, beam=2, batch_size=3)
    for source, hyp in zip(SOURCES, hyps):
        assert hyp.tokens == search(model, [source], 2)[0].tokens
    greedy = translate_ids(model, SOURCES, sos_id=SOS, eos_id=EOS, pad_id=PAD, beam=1, alpha=0.0, batch_size=2)
    assert [h.tokens for h in greedy] == [h.tokens for h in search(model, SOURCES, 0)]
    assert all(SOS not in h.tokens and PAD not in h.tokens for h in hyps + greedy)
