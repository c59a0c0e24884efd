r"""Continuous batching: concurrent generation requests share one batched decode loop (iteration-level scheduling,
Yu et al. 2022, "Orca"): a request joins the batch at the next step and leaves it when done, so N streams at once
cost about one batched step per token instead of N single-row steps.

:class:`ContinuousBatcher` owns one background thread per model. Each iteration:

1. admits the waiting requests: each prompt's window (its last ``max_len`` tokens) is encoded alone, in a KV cache
   of its own (the logits of its first token are its solo run's), then its rows join the shared cache;
2. chooses every row's next token from its logits with the row's own sampling and random stream (the argmax at
   temperature 0), hands it to the request's :class:`TokenStream`, and drops the rows that are done (``<eos>``,
   ``max_new_tokens``, or a closed stream);
3. feeds every remaining row its token in one batched step of the shared cache, and recomputes the rows whose
   window slid past ``max_len`` (all of them in one batch of ``max_len`` windows), as solo generation does.

The shared cache holds the rows left-padded on one slot clock (:mod:`seqlab.nn.attention`, ``pad_left``): a row's
token in slot s is at position s - start[row]. A request joining at clock P with a prompt of L tokens: the rows move
right to max(P, L) (:func:`seqlab.decoding.cache_rows.shift_slots`) and stack; when the clock reaches ``max_len``,
every row moves left by the smallest start. A row's keys and values depend on its positions, not its slots, so its
logits are its solo run's up to rounding: the batched products sum in other orders, over other shapes.

Greedy streams therefore give their solo run's tokens, except after a step whose top two logits lie within the
rounding bound of the batched computation, where the argmax may go either way. That bound, per row, is twice
(two evaluations) the chained-reduction bound of :func:`seqlab.base.bounds.chain_bound`:

    margin = 2 · (9 · n_layers + 2) · γ_n · Σ_i |h_i| |W_ji|,    n = max(d_model, d_ff, max_len)

with h the final hidden state, W_j the output projection's row of either of the top two tokens (the larger sum),
9 reductions a layer plus the embedding and the head (as tests/test_lm.py counts them), each error passed on with
gain 1. A greedy token chosen from a shared step's logits whose top two lie within it is a near tie, counted per
stream (:attr:`TokenStream.near_ties`) and per loop (:attr:`ContinuousBatcher.near_ties`).

Shapes: rows (requests in the shared cache), seq, d_model, vocab, max_len (cache slots).
"""

from __future__ import annotations

import atexit
import queue
import threading
import weakref
from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import Tensor

from seqlab.base.bounds import chain_bound
from seqlab.base.errors import SeqlabError, spelled
from seqlab.decoding.cache_rows import row_lengths, select_rows, shift_slots, stack
from seqlab.decoding.decode import Sampling, check_length, next_token
from seqlab.nn.attention import KVCache

IDLE_S = 2.0  # the loop's thread ends after this long without a request (a new request starts another)
_LOOPS: weakref.WeakSet = weakref.WeakSet()  # every batcher, stopped at exit (a daemon thread killed inside a
# torch op can abort the interpreter's exit)


class Streamed(NamedTuple):
    """One token of a stream: its id, the model's distribution p(x_t | x_<t) it was chosen from (softmax of the
    raw logits, before temperature and filters; (vocab,)), and whether it was a near tie (module docstring)."""

    token: int
    probs: Tensor
    near_tie: bool


_END = object()  # the end of a stream, in its queue


class TokenStream:
    """One request's tokens as the loop makes them: iterate for :class:`Streamed` items (a loop error is raised
    here); ``close()`` leaves the batch at the next step; ``near_ties`` counts the near ties seen so far."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self.near_ties = 0
        self.closed = False

    def __iter__(self) -> TokenStream:
        return self

    def __next__(self) -> Streamed:
        item = self._queue.get()
        if item is _END:
            self._queue.put(_END)  # a second next() ends too
            raise StopIteration
        if isinstance(item, BaseException):
            raise item
        self.near_ties += item.near_tie
        return item

    def close(self) -> None:
        """Stop generating for this stream (its row leaves the batch at the next step)."""
        self.closed = True

    def _put(self, item: object) -> None:
        self._queue.put(item)


@dataclass
class _Row:
    """A request in the loop: its stream, token window (1, seq<=max_len), tokens left, sampling, random stream, and
    the logits its next token is chosen from (vocab,) with the bound's magnitude (None: from its solo encoding)."""

    stream: TokenStream
    window: Tensor
    left: int
    sampling: Sampling
    generator: torch.Generator
    logits: Tensor
    terms: float | None = None


class ContinuousBatcher:
    """The shared decode loop of one Transformer LM (``model.step`` and a KV cache): ``submit`` a prompt, iterate
    the :class:`TokenStream` it returns. Thread-safe; the loop runs in a thread of its own while requests are
    pending (module docstring). ``steps``, ``rows_stepped`` (their sum of rows) and ``near_ties`` describe it."""

    def __init__(self, model, eos_id: int | None = None, device: torch.device | None = None,
                 idle_s: float = IDLE_S) -> None:
        if not hasattr(model, "step"):
            raise SeqlabError(f"continuous batching needs a Transformer LM with a KV cache, not {type(model).__name__}")
        self.model, self.eos_id, self.idle_s = model, eos_id, idle_s
        self.device = device or next(model.parameters()).device
        cfg = model.cfg
        self.max_len = cfg.max_len
        self._reductions = (9 * cfg.n_layers + 2, max(cfg.d_model, cfg.d_ff, cfg.max_len))
        self._dtype = next(model.parameters()).dtype
        self._wake = threading.Condition()
        self._waiting: list[tuple[TokenStream, list[int], int, Sampling, int | None]] = []
        self._thread: threading.Thread | None = None
        self.cache: KVCache | None = None  # the shared cache of the rows in ``cached`` (None when there are none)
        self.cached: list[_Row] = []
        self.sliding: list[_Row] = []  # rows whose window slid past max_len: recomputed every step
        self.steps = self.rows_stepped = self.near_ties = 0
        self._closing = False
        _LOOPS.add(self)

    def submit(self, prompt: list[int], max_new_tokens: int, sampling: Sampling = Sampling(),
               seed: int | None = None) -> TokenStream:
        """Queue a prompt (token ids); it joins the batch at the next step. Its tokens are those of
        :func:`seqlab.decoding.decode.stream` for the same arguments, up to near ties (module docstring)."""
        check_length(max_new_tokens, seed)
        if not prompt:
            raise SeqlabError(f"an empty prompt has no token to condition on; give {spelled('prompt')} some text")
        stream = TokenStream()
        with self._wake:
            self._waiting.append((stream, list(prompt), max_new_tokens, sampling, seed))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="seqlab-decode-loop", daemon=True)
                self._thread.start()
            self._wake.notify()
        return stream

    def close(self) -> None:
        """End the loop's thread now (the streams still in it end with an error); a later submit starts anew."""
        with self._wake:
            self._closing, thread = True, self._thread
            self._wake.notify()
        if thread is not None and thread is not threading.current_thread():
            thread.join(5.0)
        with self._wake:
            self._closing = False

    def _run(self) -> None:
        with torch.inference_mode():
            while True:
                with self._wake:
                    if not self._waiting and not self.cached and not self.sliding and not self._closing:
                        self._wake.wait(self.idle_s)
                    if self._closing or not (self._waiting or self.cached or self.sliding):
                        for row in self.cached + self.sliding:
                            row.stream._put(SeqlabError("the decode loop was closed"))
                        for stream, *_ in self._waiting:
                            stream._put(SeqlabError("the decode loop was closed"))
                        self.cache, self.cached, self.sliding, self._waiting = None, [], [], []
                        self._thread = None  # a later submit starts another
                        return
                    new, self._waiting = self._waiting, []
                try:
                    self.iterate(new)
                except Exception as e:  # noqa: BLE001 - every stream in the loop gets the error and ends
                    for row in self.cached + self.sliding:
                        row.stream._put(e)
                    for stream, *_ in new:
                        stream._put(e)
                    self.cache, self.cached, self.sliding = None, [], []

    # ---- one iteration ---------------------------------------------------------------------------------------

    def iterate(self, new: list[tuple[TokenStream, list[int], int, Sampling, int | None]]) -> None:
        """Admit ``new`` requests, hand out one token a row, drop finished rows, compute the next logits."""
        for stream, prompt, max_new_tokens, sampling, seed in new:
            self._admit(stream, prompt, max_new_tokens, sampling, seed)
        self._choose()
        self._slide_full_rows()
        if self.cache is not None:
            self._step_cached(self.cache)
        if self.sliding:
            self._step_sliding()

    def _admit(self, stream: TokenStream, prompt: list[int], max_new_tokens: int, sampling: Sampling,
               seed: int | None) -> None:
        """Encode the prompt's window alone (its solo run's first logits), then join the shared cache or, when the
        window already fills ``max_len``, the sliding rows."""
        if max_new_tokens == 0:
            stream._put(_END)
            return
        window = torch.tensor([prompt], dtype=torch.long, device=self.device)[:, -self.max_len:]  # 1, seq
        own = self.model.new_cache(1, device=self.device, dtype=self._dtype)
        logits = self.model(window, cache=own)[0, -1]  # vocab
        generator = torch.Generator(device=self.device).manual_seed(0 if seed is None else seed)
        row = _Row(stream, window, max_new_tokens, sampling, generator, logits)
        if own.pos >= self.max_len:
            self.sliding.append(row)
            return
        own.pad_left(torch.zeros(1, dtype=torch.long))
        if self.cache is None:
            self.cache = own
        else:  # one slot clock: both move right to the later of the two
            clock = max(self.cache.pos, own.pos)
            if clock > self.cache.pos:
                shift_slots(self.cache, torch.full((len(self.cached),), clock - self.cache.pos), clock)
            if clock > own.pos:
                shift_slots(own, torch.tensor([clock - own.pos]), clock)
            stack(self.cache, own)
        self.cached.append(row)

    def _choose(self) -> None:
        """Every row's next token, handed to its stream; rows that are done leave the batch."""
        keep = []
        for i, row in enumerate(self.cached + self.sliding):
            token = int(next_token(row.logits[None], row.sampling, [row.generator])[0])
            near = row.terms is not None and row.sampling.temperature == 0 and self._near_tie(row)
            self.near_ties += near
            row.stream._put(Streamed(token, torch.softmax(row.logits.float(), dim=-1), near))
            row.left -= 1
            if row.left == 0 or token == self.eos_id or row.stream.closed:
                row.stream._put(_END)
                continue
            keep.append(i)
            token_ = torch.tensor([[token]], dtype=torch.long, device=self.device)  # 1, 1
            row.window = torch.cat([row.window, token_], dim=1)[:, -self.max_len:]  # 1, seq<=max_len
        n = len(self.cached)
        kept_cached = [i for i in keep if i < n]
        if len(kept_cached) < n:
            if kept_cached and self.cache is not None:
                select_rows(self.cache, torch.tensor(kept_cached, device=self.device))
            else:
                self.cache = None
        self.cached, self.sliding = [self.cached[i] for i in kept_cached], [self.sliding[i - n] for i in keep if i >= n]

    def _near_tie(self, row: _Row) -> bool:
        """Whether the row's top two logits lie within the rounding bound of the step that made them."""
        top = torch.topk(row.logits.double(), 2).values
        products, n = self._reductions
        margin = 2 * chain_bound(products, n, row.terms or 0.0, self._dtype)
        return float(top[0] - top[1]) <= margin

    def _slide_full_rows(self) -> None:
        """Rows holding ``max_len`` tokens move to the sliding rows (solo generation recomputes them from then on);
        a slot clock at ``max_len`` moves every row left by the smallest start."""
        if self.cache is None:
            return
        full = (row_lengths(self.cache) >= self.max_len).tolist()
        if any(full):
            self.sliding += [row for row, f in zip(self.cached, full) if f]
            stay = [i for i, f in enumerate(full) if not f]
            self.cached = [self.cached[i] for i in stay]
            if not stay:
                self.cache = None
                return
            select_rows(self.cache, torch.tensor(stay, device=self.device))
        if self.cache.pos >= self.max_len and self.cache.start is not None:
            m = int(self.cache.start.min())  # >= 1: every row holds fewer than max_len tokens
            shift_slots(self.cache, torch.full((len(self.cached),), -m), self.cache.pos - m)

    def _step_cached(self, cache: KVCache) -> None:
        """One batched step of the shared cache (``TransformerLM.step``, keeping the final hidden state)."""
        model = self.model
        ids = torch.cat([row.window[:, -1:] for row in self.cached])  # rows, 1
        x = model.embed(ids, cache.token_positions(1))  # rows, 1, d_model
        h = model.decoder(x, padding=cache.key_padding(1), cache=cache)  # rows, 1, d_model
        cache.advance(1)
        self._hand_out(self.cached, h[:, -1], model.head(h)[:, -1])  # rows, d_model; rows, vocab

    def _step_sliding(self) -> None:
        """The sliding rows' logits from their last ``max_len`` tokens, uncached, in one batch."""
        model = self.model
        windows = torch.cat([row.window for row in self.sliding])  # rows, max_len
        x = model.embed(windows, torch.arange(windows.shape[1], device=self.device))  # rows, max_len, d_model
        h = model.decoder(x)  # rows, max_len, d_model
        self._hand_out(self.sliding, h[:, -1], model.head(h)[:, -1])  # rows, d_model; rows, vocab

    def _hand_out(self, rows: list[_Row], hidden: Tensor, logits: Tensor) -> None:
        """Give each row its logits (rows, vocab) and the bound's magnitude from its hidden state (rows, d_model)."""
        self.steps += 1
        self.rows_stepped += len(rows)
        top = torch.topk(logits, 2, dim=-1).indices  # rows, 2
        weight = getattr(self.model.head, "weight", None)  # vocab, d_model
        if isinstance(weight, Tensor) and weight.is_floating_point():
            terms = torch.einsum("rd,rkd->rk", hidden.abs().double(), weight[top].abs().double())  # rows, 2
            magnitudes = terms.max(dim=-1).values.tolist()
        else:  # weight-only int8 layers: no float row to bound with; every greedy step counts as a near tie
            magnitudes = [float("inf")] * len(rows)
        for row, row_logits, t in zip(rows, logits, magnitudes):
            row.logits, row.terms = row_logits, t


@atexit.register
def _close_all() -> None:
    for loop in list(_LOOPS):
        loop.close()
