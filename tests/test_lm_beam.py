"""Beam search for the language model (seqlab.decoding.lm_beam): beam 1 is greedy; beam K equals a reference
written here without a cache (every continuation scored by a full forward pass over its window), hypotheses and
scores, with <eos>, left-padded prompts and a window that slides past max_len; the cache rows reordered by the
surviving beams' parents; the refusals of `generate(beam=)` and `seqlab generate --beam`."""

from __future__ import annotations

import pytest
import torch

from seqlab.base.bounds import chain_bound
from seqlab.base.errors import SeqlabError
from seqlab.decoding.beam import length_penalty
from seqlab.decoding.cache_rows import select_rows, shift_slots
from seqlab.decoding.decode import Sampling, generate
from seqlab.decoding.lm_beam import lm_beam_search
from seqlab.models.transformer import TransformerLM, TransformerLMConfig

pytestmark = pytest.mark.usefixtures("one_thread")

# two float64 evaluations of the same logits (cached and batched, or alone and uncached): tests/test_lm.py's bound
LOGIT_TOL = chain_bound(products=20, n=16, magnitude=85, dtype=torch.float64, gain=200)
PROMPTS = [[1, 2, 3], [4, 5], [6, 7, 8, 9, 1]]


def sharp_lm(max_len=16, vocab=11, seed=0) -> TransformerLM:
    """A tiny float64 LM with weights of std 0.3 (not GPT-2's 0.02): distinct, far-from-uniform distributions, so
    the beams differ from greedy and from each other."""
    torch.manual_seed(seed)
    cfg = TransformerLMConfig(vocab_size=vocab, n_layers=2, n_heads=2, d_model=8, d_ff=16, max_len=max_len,
                              dropout=0.0, positions="learned")
    model = TransformerLM(cfg).double().eval()
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.3)
    return model


def reference(model, prompt, k, max_new, eos, alpha):
    """Beam search with the module docstring's rule, one prompt, no cache: every live prefix scored by a forward
    pass over its last max_len tokens; the 2K best candidates; <eos> among the first K finished, the first K
    others live; stop at K finished or at the limit (the first K finished). Returns (tokens, score, log_prob,
    finished) best first."""
    live, finished = [([], 0.0)], []
    for t in range(max_new):
        candidates = []
        for tokens, logp in live:
            with torch.no_grad():
                window = torch.tensor([(prompt + tokens)[-model.cfg.max_len:]])
                lp = torch.log_softmax(model(window)[0, -1], dim=-1)  # vocab
            candidates += [(logp + float(lp[v]), tokens, v) for v in range(lp.numel())]
        candidates.sort(key=lambda c: -c[0])  # Python's sort is stable: ties keep beam, then token order
        top, at_limit, live = candidates[:2 * k], t + 1 == max_new, []
        for j, (score, tokens, v) in enumerate(top):
            ended = v == eos
            if j < k and (ended or at_limit):
                body = tokens if ended else tokens + [v]
                finished.append((body, score / length_penalty(t + 1, alpha), score, ended))
            elif not ended and len(live) < k:
                live.append((tokens + [v], score))
        if len(finished) >= k or at_limit:
            break
    return sorted(finished, key=lambda h: -h[1])


def assert_same(got, want):
    assert [h.tokens for h in got] == [w[0] for w in want]
    assert [h.finished for h in got] == [w[3] for w in want]
    for h, w in zip(got, want):
        assert abs(h.score - w[1]) <= 50 * LOGIT_TOL and abs(h.log_prob - w[2]) <= 50 * LOGIT_TOL


def test_beam_one_is_greedy():
    model = sharp_lm()
    for new in (8, 20):  # 20: the window slides past max_len = 16
        greedy = generate(model, PROMPTS, new, Sampling(0))
        assert [h[0].tokens for h in lm_beam_search(model, PROMPTS, 1, new)] == greedy
        assert [h[0].tokens for h in lm_beam_search(model, PROMPTS, 1, new, use_cache=False)] == greedy


@pytest.mark.parametrize("new, eos", [(6, None), (6, "early"), (19, None)])
def test_beam_equals_the_uncached_reference_with_its_scores(new, eos):
    """K = 3, three prompts of different lengths (left-padded in one batch when they fit the cache, by length
    when 19 new tokens slide past max_len); <eos> taken from the greedy output, so some hypotheses end early."""
    model = sharp_lm()
    eos_id = generate(model, [PROMPTS[0]], 3, Sampling(0))[0][1] if eos else None
    got = lm_beam_search(model, PROMPTS, 3, new, eos_id=eos_id, alpha=0.6)
    for prompt, hyps in zip(PROMPTS, got):
        want = reference(model, prompt, 3, new, eos_id, 0.6)
        assert_same(hyps, want)
    if eos:
        assert any(h.finished for hyps in got for h in hyps)
        assert all(eos_id not in h.tokens for hyps in got for h in hyps)
    uncached = lm_beam_search(model, PROMPTS, 3, new, eos_id=eos_id, use_cache=False)
    assert [[h.tokens for h in hyps] for hyps in uncached] == [[h.tokens for h in hyps] for hyps in got]


def test_cache_rows_follow_their_parents():
    """select_rows repeats and reorders left-padded rows (keys, values and padding): the next step's logits are
    those of each parent's own cache; shift_slots moves a row's tokens without changing its logits."""
    model = sharp_lm(max_len=12)
    prompts = [[1, 2, 3, 4], [5, 6]]
    with torch.inference_mode():
        cache = model.new_cache(2)
        cache.pad_left(torch.tensor([0, 2]))
        model(torch.tensor([[1, 2, 3, 4], [0, 0, 5, 6]]), cache=cache)
        parents = torch.tensor([1, 0, 1])
        select_rows(cache, parents)
        shift_slots(cache, torch.full((3,), 3), cache.pos + 3)  # every row's tokens end at the new clock
        fed = torch.tensor([[7], [8], [9]])
        got = model(fed, cache=cache)[:, -1]  # 3, vocab
        for row, parent in enumerate(parents.tolist()):
            alone = model(torch.tensor([prompts[parent] + fed[row].tolist()]))[0, -1]
            assert (got[row] - alone).abs().max().item() <= LOGIT_TOL


def test_cache_rows_reordered_in_place_follow_their_parents():
    """Beam search's reordering (as many rows as before): in place, copying only the moved rows' filled slots; the
    storage stays the same tensors (a compiled step reads them) and each row's next logits are its parent's."""
    model = sharp_lm(max_len=12)
    prompts = [[1, 2, 3, 4], [5, 6], [7, 8, 9]]
    with torch.inference_mode():
        cache = model.new_cache(3)
        cache.pad_left(torch.tensor([0, 2, 1]))
        model(torch.tensor([[1, 2, 3, 4], [0, 0, 5, 6], [0, 7, 8, 9]]), cache=cache)
        storage = [t.data_ptr() for t in (*cache.k, *cache.v)]
        parents = torch.tensor([2, 1, 0])  # row 1 keeps its own, rows 0 and 2 swap
        select_rows(cache, parents)
        assert [t.data_ptr() for t in (*cache.k, *cache.v)] == storage and cache.start.tolist() == [1, 2, 0]
        fed = torch.tensor([[3], [4], [5]])
        got = model(fed, cache=cache)[:, -1]  # 3, vocab
        for row, parent in enumerate(parents.tolist()):
            alone = model(torch.tensor([prompts[parent] + fed[row].tolist()]))[0, -1]
            assert (got[row] - alone).abs().max().item() <= LOGIT_TOL


def test_lm_generate_beam_and_its_refusals(serve_runs, seqlab_cli):
    """`LanguageModel.generate(beam=K)` and `seqlab generate --beam K` print the best hypothesis; beam with a
    sampling option, alpha without beam, beam 0 and max_new_tokens 0 with a beam are one-line errors."""
    from seqlab import api

    run = serve_runs[0] / "lm"
    lm = api.load(run, device="cpu")
    text = lm.generate("The cat", max_new_tokens=12, beam=3, alpha=0.0)
    assert text == lm.generate("The cat", max_new_tokens=12, beam=3, alpha=0.0)  # deterministic
    assert lm.generate("The cat", max_new_tokens=12, beam=1) == lm.generate("The cat", max_new_tokens=12,
                                                                             temperature=0)
    assert lm.generate(["The cat", "A"], max_new_tokens=12, beam=3, alpha=0.0)[0] == text
    code, out, err = seqlab_cli("generate", run, "--prompt", "The cat", "--max-new-tokens", "12", "--beam", "3",
                                "--alpha", "0", "--device", "cpu")
    assert code == 0 and out == "The cat" + text + "\n"
    for args, says in ((["--beam", "2", "--top-k", "3"], "drop --top-k"),
                       (["--beam", "2", "--temperature", "0.5", "--top-p", "0.9"], "drop --temperature, --top-p"),
                       (["--alpha", "0.6"], "give --beam K"),
                       (["--beam", "0"], "--beam must be an integer >= 1"),
                       (["--beam", "2", "--max-new-tokens", "0"], "max_new_tokens >= 1")):
        code, out, err = seqlab_cli("generate", run, "--prompt", "x", "--device", "cpu", *args)
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and says in err, err
    with pytest.raises(SeqlabError, match="does not sample"):
        lm.generate("x", beam=2, temperature=0.0)
