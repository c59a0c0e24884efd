"""Chapter 3's solutions, one function per exercise (named as the exercise asks), and the planted wrong answers:
each usual mistake written as a learner writes it, which the checker must name (tests/test_course.py).

The site shows each solution in a collapsed block under its exercise; the notebooks never contain them."""

import torch


def elman_step(x, h, w_ih, w_hh, b_ih, b_hh):
    # a_t = tanh(W_1 x_t + W_3 a_{t-1} + b_1), one example per row: W x is x @ W.T
    return torch.tanh(x @ w_ih.T + b_ih + h @ w_hh.T + b_hh)  # batch, hidden


def notes_gru_step(x, c, w_u, b_u, w_c, b_c):
    joined = torch.cat([c, x], dim=1)  # batch, hidden+input: [c_{t-1}, x_t], the memory first
    candidate = torch.tanh(joined @ w_c.T + b_c)  # c~_t
    gamma_u = torch.sigmoid(joined @ w_u.T + b_u)  # Γ_u: how much of the candidate to write
    return gamma_u * candidate + (1 - gamma_u) * c


def gru_step(x, h, w_ih, w_hh, b_ih, b_hh):
    x_r, x_z, x_n = (x @ w_ih.T + b_ih).chunk(3, dim=1)  # batch, hidden each: gates stacked (r, z, n)
    h_r, h_z, h_n = (h @ w_hh.T + b_hh).chunk(3, dim=1)
    r = torch.sigmoid(x_r + h_r)  # reset gate
    z = torch.sigmoid(x_z + h_z)  # update gate: the share of the old state kept
    n = torch.tanh(x_n + r * h_n)  # candidate; r scales W_hn h + b_hn (after the product)
    return (1 - z) * n + z * h


def lstm_step(x, h, c, w_ih, w_hh, b_ih, b_hh):
    i, f, g, o = (x @ w_ih.T + b_ih + h @ w_hh.T + b_hh).chunk(4, dim=1)  # batch, hidden each: (i, f, g, o)
    c_t = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)  # keep part of the memory, add the candidate
    h_t = torch.sigmoid(o) * torch.tanh(c_t)
    return h_t, c_t


def _elman_run(x, weights):
    """One direction over one sequence x (seq, input) from a_0 = 0 -> the states (seq, hidden)."""
    w_ih, w_hh, b_ih, b_hh = weights
    a = x.new_zeros(w_hh.shape[0])
    states = []
    for x_t in x:
        a = torch.tanh(w_ih @ x_t + b_ih + w_hh @ a + b_hh)
        states.append(a)
    return torch.stack(states)


def bidirectional_rnn(x, lengths, forward, backward):
    batch, seq, _ = x.shape
    hidden = forward[1].shape[0]
    out = x.new_zeros(batch, seq, 2 * hidden)  # zeros stay at the padding
    for b in range(batch):
        n = int(lengths[b])
        real = x[b, :n]  # the real tokens only
        out[b, :n, :hidden] = _elman_run(real, forward)
        out[b, :n, hidden:] = _elman_run(real.flip(0), backward).flip(0)  # read from the last token, put back in place
    return out


def crf_log_partition(emissions, mask, transitions, start, end):
    batch = emissions.shape[0]
    result = []
    for b in range(batch):
        n = int(mask[b].sum())
        alpha = start + emissions[b, 0]  # labels
        for t in range(1, n):
            # alpha[i] + A[i, j], summed (in log space) over the previous tag i: dim 0
            alpha = torch.logsumexp(alpha[:, None] + transitions, dim=0) + emissions[b, t]
        result.append(torch.logsumexp(alpha + end, dim=0))
    return torch.stack(result)  # batch


def viterbi(emissions, mask, transitions, start, end):
    paths = []
    for b in range(emissions.shape[0]):
        n = int(mask[b].sum())
        delta = start + emissions[b, 0]  # labels
        back = []
        for t in range(1, n):
            best, psi = (delta[:, None] + transitions).max(dim=0)  # over the previous tag i
            back.append(psi)
            delta = best + emissions[b, t]
        y = int((delta + end).argmax())
        path = [y]
        for psi in reversed(back):
            y = int(psi[y])
            path.append(y)
        paths.append(path[::-1])
    return paths


def max_pool(states, padding):
    real = padding[:, :, None]  # batch, seq, 1
    return states.masked_fill(~real, float("-inf")).amax(dim=1)  # the padding can never be the maximum


# ------------------------------------------------------------------------------------------------------
# planted wrong answers: exercise id -> {mistake name: a learner's function with that mistake}


def _elman_sigmoid(x, h, w_ih, w_hh, b_ih, b_hh):
    return torch.sigmoid(x @ w_ih.T + b_ih + h @ w_hh.T + b_hh)


def _elman_transposed(x, h, w_ih, w_hh, b_ih, b_hh):
    return torch.tanh(x @ w_ih.T + b_ih + h @ w_hh + b_hh)


def _elman_one_bias(x, h, w_ih, w_hh, b_ih, b_hh):
    return torch.tanh(x @ w_ih.T + h @ w_hh.T + b_ih)


def _notes_gru_swapped(x, c, w_u, b_u, w_c, b_c):
    joined = torch.cat([c, x], dim=1)
    gamma_u = torch.sigmoid(joined @ w_u.T + b_u)
    return gamma_u * c + (1 - gamma_u) * torch.tanh(joined @ w_c.T + b_c)


def _notes_gru_x_first(x, c, w_u, b_u, w_c, b_c):
    joined = torch.cat([x, c], dim=1)  # the input first
    gamma_u = torch.sigmoid(joined @ w_u.T + b_u)
    return gamma_u * torch.tanh(joined @ w_c.T + b_c) + (1 - gamma_u) * c


def _gru_with(update_on_candidate=False, reset_before=False, order=(0, 1, 2)):
    def step(x, h, w_ih, w_hh, b_ih, b_hh):
        xs = (x @ w_ih.T + b_ih).chunk(3, dim=1)
        hs = (h @ w_hh.T + b_hh).chunk(3, dim=1)
        r_at, z_at, n_at = order
        r = torch.sigmoid(xs[r_at] + hs[r_at])
        z = torch.sigmoid(xs[z_at] + hs[z_at])
        if reset_before:  # Cho et al.: W_hn (r * h) + b_hn
            hidden = h.shape[1]
            w_hn, b_hn = w_hh[2 * hidden:], b_hh[2 * hidden:]
            n = torch.tanh(xs[n_at] + (r * h) @ w_hn.T + b_hn)
        else:
            n = torch.tanh(xs[n_at] + r * hs[n_at])
        return z * n + (1 - z) * h if update_on_candidate else (1 - z) * n + z * h

    return step


def _lstm_forget_input_swapped(x, h, c, w_ih, w_hh, b_ih, b_hh):
    f, i, g, o = (x @ w_ih.T + b_ih + h @ w_hh.T + b_hh).chunk(4, dim=1)  # read as (f, i, g, o)
    c_t = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c_t), c_t


def _lstm_tanh_sigmoid(x, h, c, w_ih, w_hh, b_ih, b_hh):
    i, f, g, o = (x @ w_ih.T + b_ih + h @ w_hh.T + b_hh).chunk(4, dim=1)
    c_t = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.sigmoid(g)
    return torch.tanh(o) * torch.tanh(c_t), c_t


def _lstm_state_order(x, h, c, w_ih, w_hh, b_ih, b_hh):
    h_t, c_t = lstm_step(x, h, c, w_ih, w_hh, b_ih, b_hh)
    return c_t, h_t


def _bidirectional_cat_backwards(x, lengths, forward, backward):
    out = bidirectional_rnn(x, lengths, forward, backward)
    hidden = forward[1].shape[0]
    return torch.cat([out[..., hidden:], out[..., :hidden]], dim=-1)


def _bidirectional_not_back(x, lengths, forward, backward):
    batch, seq, _ = x.shape
    hidden = forward[1].shape[0]
    out = x.new_zeros(batch, seq, 2 * hidden)
    for b in range(batch):
        n = int(lengths[b])
        out[b, :n, :hidden] = _elman_run(x[b, :n], forward)
        out[b, :n, hidden:] = _elman_run(x[b, :n].flip(0), backward)  # left in reading order
    return out


def _bidirectional_flip_padded(x, lengths, forward, backward):
    batch, seq, _ = x.shape
    hidden = forward[1].shape[0]
    out = x.new_zeros(batch, seq, 2 * hidden)
    for b in range(batch):
        n = int(lengths[b])
        out[b, :n, :hidden] = _elman_run(x[b, :n], forward)
        out[b, :n, hidden:] = _elman_run(x[b].flip(0), backward).flip(0)[:n]  # the whole padded row reversed
    return out


def _bidirectional_shared_weights(x, lengths, forward, backward):
    return bidirectional_rnn(x, lengths, forward, forward)


def _log_partition_with(reduce, use_start_end=True, transpose=False, use_mask=True):
    def log_partition(emissions, mask, transitions, start, end):
        a = transitions.T if transpose else transitions
        s, e = (start, end) if use_start_end else (0 * start, 0 * end)
        out = []
        for b in range(emissions.shape[0]):
            n = int(mask[b].sum()) if use_mask else emissions.shape[1]
            alpha = s + emissions[b, 0]
            for t in range(1, n):
                alpha = reduce(alpha[:, None] + a) + emissions[b, t]
            out.append(reduce((alpha + e)[:, None])[0])
        return torch.stack(out)

    return log_partition


def _viterbi_transposed(emissions, mask, transitions, start, end):
    return viterbi(emissions, mask, transitions.T, start, end)


def _viterbi_no_start_end(emissions, mask, transitions, start, end):
    paths = []
    for b in range(emissions.shape[0]):
        n = int(mask[b].sum())
        delta, back = emissions[b, 0].clone(), []
        for t in range(1, n):
            best, psi = (delta[:, None] + transitions).max(dim=0)
            back.append(psi)
            delta = best + emissions[b, t]
        path = [int(delta.argmax())]
        for psi in reversed(back):
            path.append(int(psi[path[-1]]))
        paths.append(path[::-1])
    return paths


def _viterbi_greedy(emissions, mask, transitions, start, end):
    return [emissions[b, :int(mask[b].sum())].argmax(dim=1).tolist() for b in range(emissions.shape[0])]


def _viterbi_padding(emissions, mask, transitions, start, end):
    full = viterbi(emissions, torch.ones_like(mask), transitions, start, end)  # every position, then cut
    return [path[:int(mask[b].sum())] for b, path in enumerate(full)]


def _pool_padding_included(states, padding):
    return states.amax(dim=1)


def _pool_padding_zero(states, padding):
    return (states * padding[:, :, None]).max(dim=1).values


def _pool_mean(states, padding):
    real = padding[:, :, None].to(states.dtype)
    return (states * real).sum(dim=1) / real.sum(dim=1)


PLANTED = {
    "03.1": {
        "sigmoid-for-tanh": _elman_sigmoid,
        "w_hh-transposed": _elman_transposed,
        "one-bias": _elman_one_bias,
    },
    "03.2": {
        "update-gate-swapped": _notes_gru_swapped,
        "concat-order": _notes_gru_x_first,
    },
    "03.3": {
        "update-gate-swapped": _gru_with(update_on_candidate=True),
        "reset-before-product": _gru_with(reset_before=True),
        "gate-order": _gru_with(order=(1, 0, 2)),
    },
    "03.4": {
        "forget-input-swapped": _lstm_forget_input_swapped,
        "tanh-sigmoid-swapped": _lstm_tanh_sigmoid,
        "state-order": _lstm_state_order,
    },
    "03.5": {
        "concatenated-backwards": _bidirectional_cat_backwards,
        "not-reversed-back": _bidirectional_not_back,
        "reversed-over-padding": _bidirectional_flip_padded,
        "backward-with-forward-weights": _bidirectional_shared_weights,
    },
    "03.6": {
        "max-for-logsumexp": _log_partition_with(lambda s: s.max(dim=0).values),
        "no-start-end": _log_partition_with(lambda s: torch.logsumexp(s, dim=0), use_start_end=False),
        "transitions-transposed": _log_partition_with(lambda s: torch.logsumexp(s, dim=0), transpose=True),
        "padding-counted": _log_partition_with(lambda s: torch.logsumexp(s, dim=0), use_mask=False),
    },
    "03.7": {
        "transitions-transposed": _viterbi_transposed,
        "no-start-end": _viterbi_no_start_end,
        "greedy": _viterbi_greedy,
        "padding-counted": _viterbi_padding,
    },
    "03.8": {
        "padding-included": _pool_padding_included,
        "padding-as-zero": _pool_padding_zero,
        "mean-for-max": _pool_mean,
    },
}
