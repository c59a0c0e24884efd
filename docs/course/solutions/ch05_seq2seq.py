"""Chapter 5's solutions, one function per exercise (named as the exercise asks), and the planted wrong answers:
each usual mistake written as a learner writes it, which the checker must name (tests/test_course.py).

The site shows each solution in a collapsed block under its exercise; the notebooks never contain them."""

import math
from collections import Counter

import torch

# ------------------------------------------------------------------------------------------------------
# 05.1 Bahdanau's additive attention


def additive_attention(query, keys, mask, W_s, W_h, v):
    hidden = torch.tanh((query @ W_s.T)[:, None, :] + keys @ W_h.T)  # batch, src, attn: W_s s + W_h a
    e = hidden @ v  # batch, src: e_{t,t'} = v^T tanh(...)
    e = e.masked_fill(~mask, float("-inf"))  # padding (False) gets no weight
    alpha = torch.softmax(e, dim=-1)  # over the source positions
    context = (alpha[:, :, None] * keys).sum(dim=1)  # batch, key: sum_t' alpha_{t,t'} a_{t'}
    return context, alpha


# ------------------------------------------------------------------------------------------------------
# 05.2 one decoder step


def decoder_step(prev, s_prev, memory, mask, params):
    p = params
    emb = p["E"][prev]  # batch, d_model: E y_{t-1}
    context, alpha = additive_attention(s_prev, memory, mask, p["W_s"], p["W_h"], p["v"])  # attend with s_{t-1}
    x = torch.cat([emb, context], dim=-1)  # batch, d_model + 2*hidden
    gi = x @ p["W_ih"].T + p["b_ih"]  # batch, 3*hidden, rows r, z, n
    gh = s_prev @ p["W_hh"].T + p["b_hh"]
    i_r, i_z, i_n = gi.chunk(3, dim=-1)
    h_r, h_z, h_n = gh.chunk(3, dim=-1)
    r = torch.sigmoid(i_r + h_r)
    z = torch.sigmoid(i_z + h_z)
    n = torch.tanh(i_n + r * h_n)  # the reset gate scales W_hn h + b_hn
    s_t = (1 - z) * n + z * s_prev  # z keeps the old state
    features = torch.cat([s_t, context, emb], dim=-1)  # [s_t ; c_t ; E y_{t-1}]
    logits = torch.tanh(features @ p["W_r"].T + p["b_r"]) @ p["W_o"].T  # batch, vocab
    return logits, s_t, alpha


# ------------------------------------------------------------------------------------------------------
# 05.3 beam search with the length penalty

EOS = 1


def beam_search(log_probs, beam, max_len, alpha):
    def lp(length):  # GNMT's length penalty
        return ((5 + length) / 6) ** alpha

    live = [((), 0.0)]  # (prefix, summed log-probability)
    finished = []  # (tokens, score, log_prob)
    for t in range(1, max_len + 1):
        candidates = []
        for prefix, score in live:
            row = log_probs[prefix].tolist()
            candidates += [(prefix + (token,), score + lp_token) for token, lp_token in enumerate(row)]
        candidates.sort(key=lambda c: -c[1])  # best first; sort is stable, so ties keep their order
        top = [c for c in candidates[: 2 * beam] if c[1] > -math.inf]
        for prefix, score in top[:beam]:
            if prefix[-1] == EOS:
                finished.append((list(prefix[:-1]), score / lp(t), score))
            elif t == max_len:
                finished.append((list(prefix), score / lp(t), score))
        if len(finished) >= beam or t == max_len:
            break
        live = [c for c in top if c[0][-1] != EOS][:beam]  # finished hypotheses are set aside
    return max(finished, key=lambda h: h[1])  # max keeps the first of equal scores


# ------------------------------------------------------------------------------------------------------
# 05.4 clipped n-gram precision


def _ngrams(tokens, n):
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def clipped_counts(candidate, references, max_order):
    matched, total = [], []
    for n in range(1, max_order + 1):
        cand = _ngrams(candidate, n)
        refs = [_ngrams(r, n) for r in references]
        clip = {g: max(r[g] for r in refs) for g in cand}  # the largest count in any one reference
        matched.append(sum(min(count, clip[g]) for g, count in cand.items()))
        total.append(sum(cand.values()))
    return matched, total


# ------------------------------------------------------------------------------------------------------
# 05.5 the brevity penalty


def _closest(length, ref_lengths):
    return min(ref_lengths, key=lambda r: (abs(r - length), r))  # the closest; the shorter on a tie


def brevity_penalty(candidate_lengths, reference_lengths):
    c = sum(candidate_lengths)
    r = sum(_closest(h, refs) for h, refs in zip(candidate_lengths, reference_lengths))
    bp = 1.0 if c > r else math.exp(1 - r / c)
    return c, r, bp


# ------------------------------------------------------------------------------------------------------
# 05.6 corpus BLEU


def corpus_bleu(candidates, references, max_order):
    matched, total = [0] * max_order, [0] * max_order
    c = r = 0
    for cand, refs in zip(candidates, references):  # sum the statistics first
        m, t = clipped_counts(cand, refs, max_order)
        matched = [a + b for a, b in zip(matched, m)]
        total = [a + b for a, b in zip(total, t)]
        c += len(cand)
        r += _closest(len(cand), [len(ref) for ref in refs])
    log_mean = sum(math.log(m / t) for m, t in zip(matched, total)) / max_order  # weights 1/N
    bp = 1.0 if c > r else math.exp(1 - r / c)
    return bp * math.exp(log_mean)


# ------------------------------------------------------------------------------------------------------
# planted wrong answers: exercise id -> {mistake name: a learner's function with that mistake}


def _attention_with(use_tanh=True, axis=-1, masked=True, inverted=False):
    def attention(query, keys, mask, W_s, W_h, v):
        hidden = (query @ W_s.T)[:, None, :] + keys @ W_h.T
        e = (torch.tanh(hidden) if use_tanh else hidden) @ v
        if masked:
            e = e.masked_fill(mask if inverted else ~mask, float("-inf"))
        alpha = torch.softmax(e, dim=axis)  # a fully masked row or column gives NaN: the checker still names it
        return torch.einsum("bs,bsk->bk", alpha, keys), alpha

    return attention


def _decoder_with(readout_tanh=True, update_swapped=False, reset_before_w=False, masked=True):
    def step(prev, s_prev, memory, mask, params):
        p = params
        emb = p["E"][prev]
        attend_mask = mask if masked else torch.ones_like(mask)
        context, alpha = additive_attention(s_prev, memory, attend_mask, p["W_s"], p["W_h"], p["v"])
        x = torch.cat([emb, context], dim=-1)
        W_ir, W_iz, W_in = p["W_ih"].chunk(3)
        W_hr, W_hz, W_hn = p["W_hh"].chunk(3)
        b_ir, b_iz, b_in = p["b_ih"].chunk(3)
        b_hr, b_hz, b_hn = p["b_hh"].chunk(3)
        r = torch.sigmoid(x @ W_ir.T + b_ir + s_prev @ W_hr.T + b_hr)
        z = torch.sigmoid(x @ W_iz.T + b_iz + s_prev @ W_hz.T + b_hz)
        if reset_before_w:
            n = torch.tanh(x @ W_in.T + b_in + (r * s_prev) @ W_hn.T + b_hn)
        else:
            n = torch.tanh(x @ W_in.T + b_in + r * (s_prev @ W_hn.T + b_hn))
        s_t = z * n + (1 - z) * s_prev if update_swapped else (1 - z) * n + z * s_prev
        hidden = torch.cat([s_t, context, emb], dim=-1) @ p["W_r"].T + p["b_r"]
        logits = (torch.tanh(hidden) if readout_tanh else hidden) @ p["W_o"].T
        return logits, s_t, alpha

    return step


def _beam_with(add_previous=True, penalty=lambda length, alpha: ((5 + length) / 6) ** alpha, keep_eos=False):
    def search(log_probs, beam, max_len, alpha):
        beams = [((), 0.0)]
        done = []
        for t in range(1, max_len + 1):
            scored = []
            for prefix, score in beams:
                base = score if add_previous else 0.0
                for token, value in enumerate(log_probs[prefix].tolist()):
                    scored.append((prefix + (token,), base + value))
            scored.sort(key=lambda c: c[1], reverse=True)  # reverse=True keeps ties in order too
            scored = [c for c in scored[: 2 * beam] if c[1] != -math.inf]
            for prefix, score in scored[:beam]:
                if prefix[-1] == EOS or t == max_len:
                    tokens = list(prefix[:-1]) if prefix[-1] == EOS else list(prefix)
                    done.append((tokens, score / penalty(t, alpha), score))
            if len(done) >= beam or t == max_len:
                break
            beams = scored[:beam] if keep_eos else [c for c in scored if c[0][-1] != EOS][:beam]
        best = done[0]
        for hyp in done[1:]:
            if hyp[1] > best[1]:
                best = hyp
        return best

    return search


def _counts_with(clip):
    def counts(candidate, references, max_order):
        matched, total = [], []
        for n in range(1, max_order + 1):
            cand = _ngrams(candidate, n)
            refs = [_ngrams(r, n) for r in references]
            matched.append(sum(clip(count, [r[g] for r in refs]) for g, count in cand.items()))
            total.append(sum(cand.values()))
        return matched, total

    return counts


def _penalty_with(swap=False, closest=_closest, per_sentence=False):
    def penalty(candidate_lengths, reference_lengths):
        c = sum(candidate_lengths)
        rs = [closest(h, refs) for h, refs in zip(candidate_lengths, reference_lengths)]
        r = sum(rs)

        def bp(c, r):
            if swap:
                c, r = r, c
            return 1.0 if c > r else math.exp(1 - r / c)

        if per_sentence:
            return c, r, sum(bp(h, ri) for h, ri in zip(candidate_lengths, rs)) / len(rs)
        return c, r, bp(c, r)

    return penalty


def _bleu_with(per_sentence=False, inverted=False, weight=None, clip=True, penalty=True):
    def stats(cands, refs_all, max_order):
        matched, total, c, r = [0] * max_order, [0] * max_order, 0, 0
        for cand, refs in zip(cands, refs_all):
            for n in range(1, max_order + 1):
                grams = _ngrams(cand, n)
                ref_grams = [_ngrams(ref, n) for ref in refs]
                for g, count in grams.items():
                    most = max(rg[g] for rg in ref_grams)
                    matched[n - 1] += min(count, most) if clip else (count if most else 0)
                total_n = sum(grams.values())
                total[n - 1] += total_n
            c += len(cand)
            r += _closest(len(cand), [len(ref) for ref in refs])
        return matched, total, c, r

    def score(cands, refs_all, max_order):
        matched, total, c, r = stats(cands, refs_all, max_order)
        w = 1 / max_order if weight is None else weight
        if c > r or not penalty:
            bp = 1.0
        else:
            bp = math.exp(1 - c / r) if inverted else math.exp(1 - r / c)
        return bp * math.exp(sum(w * math.log(m / t) for m, t in zip(matched, total)))

    def bleu(candidates, references, max_order):
        if per_sentence:
            return sum(score([c], [refs], max_order) for c, refs in zip(candidates, references)) / len(candidates)
        return score(candidates, references, max_order)

    return bleu


PLANTED = {
    "05.1": {
        "no-tanh": _attention_with(use_tanh=False),
        "softmax-over-batch": _attention_with(axis=0),
        "padding-not-masked": _attention_with(masked=False),
        "mask-inverted": _attention_with(inverted=True),
    },
    "05.2": {
        "readout-no-tanh": _decoder_with(readout_tanh=False),
        "update-gate-swapped": _decoder_with(update_swapped=True),
        "reset-before-W_hn": _decoder_with(reset_before_w=True),
        "padding-not-masked": _decoder_with(masked=False),
    },
    "05.3": {
        "no-previous-log-prob": _beam_with(add_previous=False),
        "no-length-penalty": _beam_with(penalty=lambda length, alpha: 1.0),
        "length-penalty-inverted": _beam_with(penalty=lambda length, alpha: ((5 + length) / 6) ** -alpha),
        "finished-extended": _beam_with(keep_eos=True),
    },
    "05.4": {
        "not-clipped": _counts_with(lambda count, ref_counts: count if max(ref_counts) > 0 else 0),
        "clipped-by-sum": _counts_with(lambda count, ref_counts: min(count, sum(ref_counts))),
        "first-reference-only": _counts_with(lambda count, ref_counts: min(count, ref_counts[0])),
    },
    "05.5": {
        "r-c-swapped": _penalty_with(swap=True),
        "tie-to-longer": _penalty_with(closest=lambda h, refs: min(refs, key=lambda r: (abs(r - h), -r))),
        "longest-reference": _penalty_with(closest=lambda h, refs: max(refs)),
        "sentence-average": _penalty_with(per_sentence=True),
    },
    "05.6": {
        "sentence-average": _bleu_with(per_sentence=True),
        "bp-ratio-inverted": _bleu_with(inverted=True),
        "weights-not-1/N": _bleu_with(weight=1.0),
        "not-clipped": _bleu_with(clip=False),
        "no-brevity-penalty": _bleu_with(penalty=False),
    },
}
