"""Decoding for autoregressive models: greedy, temperature / top-k / top-p sampling.

Each step draws the next token from p(x_t | x_<t) = softmax(logits_t / temperature):

- greedy (temperature 0): x_t = argmax logits_t;
- top-k: keep the k largest logits, the rest get probability 0;
- top-p (nucleus, Holtzman et al. 2019): keep the smallest set of most probable tokens whose total
  probability reaches p (the most probable token is always kept);
- generation stops at ``<eos>`` (per sequence) or after ``max_new_tokens``.

The model sees at most ``max_len`` tokens, the most recent ones (docs/manual.md, "Rules of the code"). With a KV
cache the prompt is encoded once and each step feeds one token; once prompt + generated reaches ``max_len``,
every position's absolute position would shift, so each further step recomputes the window of the
last ``max_len`` tokens: cached output then equals uncached output token for token.

Prompts of different lengths are decoded as one batch, left-padded (Hugging Face's layout: a row's
token in cache slot s is at position s - its padding, and no query attends a padding slot), when the
model has a static-shape cached step (the Transformer) and every row fits its ``max_len`` cache slots;
otherwise (recurrent models, or outputs that slide past ``max_len``) in groups of equal length. Every
prompt samples from its own random stream seeded with ``seed``, so a prompt's output never depends on
what else is in the batch or on padding: batched generation equals one-by-one generation.
"""

from __future__ import annotations

import functools
import types
import weakref
from collections import defaultdict
from dataclasses import dataclass

import torch

from seqlab.base.errors import SeqlabError, spelled
from seqlab.nn import gemv
from seqlab.nn.weight_only import has_weight_only


@dataclass(frozen=True)
class Sampling:
    temperature: float = 1.0  # 0 = greedy
    top_k: int = 0  # 0 = off
    top_p: float = 1.0  # 1 = off

    def __post_init__(self):
        check_number("temperature", self.temperature)
        check_number("top_k", self.top_k, integer=True)
        check_number("top_p", self.top_p)
        if not self.temperature >= 0:
            raise SeqlabError(f"temperature (--temperature) must be >= 0 (0 = greedy), got {self.temperature}")
        if self.top_k < 0:
            raise SeqlabError(f"top_k (--top-k) must be >= 0 (0 = off), got {self.top_k}")
        if not 0 < self.top_p <= 1:
            raise SeqlabError(f"top_p (--top-p) must be in (0, 1] (1 = off), got {self.top_p}")


def check_number(name: str, value: object, integer: bool = False) -> None:
    """A decoding argument given from Python is a number (an int where ``integer``), not a str or a bool:
    ``generate(temperature="0.8")`` is an error naming the argument, not a TypeError from the arithmetic."""
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        what = "an integer" if integer else "a number"
        raise SeqlabError(f"{name} (--{name.replace('_', '-')}) must be {what}, got {value!r} "
                          f"({type(value).__name__}); e.g. {name}={1 if integer else 0.8}")


def check_length(max_new_tokens: int, seed: int | None) -> None:
    """``max_new_tokens`` an integer >= 0 and ``seed`` an integer or None (:func:`generate`, :func:`stream`)."""
    check_number("max_new_tokens", max_new_tokens, integer=True)
    if seed is not None:
        check_number("seed", seed, integer=True)
    if max_new_tokens < 0:
        raise SeqlabError(f"max_new_tokens (--max-new-tokens) must be >= 0, got {max_new_tokens}")


def filter_logits(logits: torch.Tensor, top_k: int = 0, top_p: float = 1.0) -> torch.Tensor:
    """Set the logits outside the top-k and the top-p nucleus to -inf. logits (batch, vocab)."""
    if top_k and top_k < logits.size(-1):
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]  # (batch, 1)
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p < 1.0:
        sorted_logits, order = torch.sort(logits, dim=-1, descending=True)  # (batch, vocab)
        probs = torch.softmax(sorted_logits, dim=-1)
        # drop a token when the tokens before it already reach top_p (so the top token always stays)
        drop_sorted = (torch.cumsum(probs, dim=-1) - probs) >= top_p
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        logits = logits.masked_fill(drop, float("-inf"))
    return logits


def next_token(logits: torch.Tensor, sampling: Sampling, generators: list[torch.Generator]) -> torch.Tensor:
    """Choose the next token of each row. logits (batch, vocab) -> (batch,).

    Each row samples from its own generator, so a row's draws do not depend on the other rows.
    """
    if sampling.temperature == 0:
        return torch.argmax(logits, dim=-1)
    logits = filter_logits(logits.float() / sampling.temperature, sampling.top_k, sampling.top_p)
    probs = torch.softmax(logits, dim=-1)  # (batch, vocab)
    return torch.cat([torch.multinomial(probs[r], 1, generator=g) for r, g in enumerate(generators)])


_COMPILED_STEPS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def forget_compiled(model) -> None:
    """Drop ``model``'s compiled decode step (its modules changed, e.g. weight-only layers: compile it anew)."""
    _COMPILED_STEPS.pop(model, None)


PRODUCTS = ("blas", "stream", "tiled")  # how a compiled decode step multiplies its rows by the weights


def inductor_options(products: str, frozen: bool = True) -> dict:
    """Inductor's options for a compiled decode step: the C++ wrapper (less per-call overhead) and, with
    ``frozen``, the weights frozen (constants of the graph: inductor packs them for its GEMM, fuses the bias
    and folds what depends on the weights alone). "tiled" adds max_autotune over inductor's C++ GEMM template,
    which computes a product with frozen weights by register-blocked micro-kernels (several outputs x several
    rows held in vector registers per pass over the inputs) over weights packed in blocks, or the BLAS where
    that measures faster for the shape."""
    options = {"cpp_wrapper": True, "freezing": frozen}
    if products == "tiled":
        options.update(max_autotune=True, max_autotune_gemm_backends="CPP,ATEN",
                       autotune_num_choices_displayed=0, max_autotune_report_choices_stats=False)  # quiet
    return options


def tracing(options: dict):
    """The context of a compiled function's first (tracing) call: dynamo decides while it traces whether the
    module's parameters become graph inputs or constants, and reads inductor's ``freezing`` for it then
    (torch._dynamo.utils.is_parameter_freezing); ``torch.compile(options=...)`` reaches inductor only after
    tracing, so given there alone, ``freezing`` froze nothing."""
    return torch._inductor.config.patch(freezing=options.get("freezing", False))


def compile_products(fn, products: str, options: dict):
    """``fn`` through torch.compile (static shapes) with ``products``' backend and inductor ``options``
    (:func:`inductor_options`); its tracing calls run under :func:`tracing` ``(options)``."""
    if products == "blas":
        return torch.compile(fn, dynamic=False, options=options)
    backend = functools.partial(gemv.backend, few_rows=products == "stream", **options)
    return torch.compile(fn, dynamic=False, backend=backend)


def weights_version(model) -> int:
    """A count that grows whenever a parameter or buffer of ``model`` is changed in place (an optimizer step,
    ``load_state_dict``): a step compiled with frozen weights is compiled again when it has moved. Inference
    tensors keep no such count (a model built under ``torch.inference_mode``): theirs are not counted."""
    return sum(t._version for t in (*model.parameters(), *model.buffers()) if not t.is_inference())


def own_code(func):
    """``func`` as a new function object with a code object of its own. Dynamo keeps a compiled function's graphs
    on its code object: compiled as it is, every model's step at every batch size would share
    ``TransformerLM.step``'s, and past ``torch._dynamo.config.recompile_limit`` entries (8) dynamo stops compiling
    (the step runs eagerly, slowly, with a warning) or, for a call whose guards are skipped, refuses
    ("Recompilation triggered with skip_guard_eval_unsafe stance"): a process that decodes with a few models or
    batch sizes (a server, a notebook, a test suite) met both. With a code object per model, products and shape,
    each holds one entry."""
    own = types.FunctionType(func.__code__.replace(), func.__globals__, func.__name__, func.__defaults__,
                             func.__closure__)
    own.__kwdefaults__, own.__qualname__ = func.__kwdefaults__, func.__qualname__
    return own


def _compiled_step(model, products: str, options: dict, version: int, shape: tuple[int, ...]):
    """``model``'s step compiled for ``products`` and the token ids' ``shape`` (batch, seq): made once per model,
    products, shape and weights version (:func:`weights_version`; a new version drops the steps of the old, whose
    graphs hold copies of the old weights), each with a code object of its own (:func:`own_code`). The step is
    the unbound ``step(model, ids, cache)``: a bound method would keep the model alive through its entry here."""
    known = _COMPILED_STEPS.get(model)
    if known is None or known[0] != version:
        known = _COMPILED_STEPS[model] = (version, {})
    steps = known[1]
    if (products, shape) not in steps:
        steps[products, shape] = compile_products(own_code(type(model).step), products, options)
    return steps[products, shape]


def decode_step(model, compile: bool = False, products: str = "blas"):
    """``f(ids, cache) -> logits``: one cached decoding step that also advances the cache.

    With ``compile`` (models with a ``step`` method, i.e. the Transformer) the step runs through
    ``torch.compile``: the one-token step over a preallocated cache has the same shapes at every
    position and reads no Python counter, so it is one graph (its cold compile: the "cold first call" column of
    the generate sections of bench/RESULTS.md). It is compiled once per model, ``products``, batch size and
    weights (:func:`weights_version`), and this function's first call of each runs with its guards checked, the
    later ones without (the shapes never change in a decode loop). "blas" leaves the matrix products to
    inductor's default (oneDNN's packed linear over the frozen weights), "stream" makes those of a few rows
    streaming reductions (:mod:`seqlab.nn.gemv`), "tiled" inductor's register-blocked C++ GEMM template
    (:func:`inductor_options`). The caller chooses (:func:`seqlab.decoding.products.decode_products` measures
    this CPU once per row count). Weights stored in bf16 or int8 (seqlab.nn.weight_only) are not frozen, since
    freezing would fold their conversion back into fp32 constants; the template takes frozen weights only, so
    "tiled" is "stream" for them.
    """
    if products not in PRODUCTS:
        raise SeqlabError(f"unknown decode products {products!r}; use one of {', '.join(PRODUCTS)}")
    if not (compile and hasattr(model, "step")):
        return lambda ids, cache: model(ids, cache=cache)
    frozen = not has_weight_only(model)
    products = "stream" if products == "tiled" and not frozen else products
    options = inductor_options(products, frozen)
    version = weights_version(model)
    steps: dict[tuple[int, ...], object] = {}  # per shape, the step this function has run once, guards checked

    def run(ids, cache):
        shape = tuple(ids.shape)  # batch, seq
        if cache.pos:  # the attended slots' count is the window's length: one graph for every position
            torch._dynamo.mark_dynamic(cache.window, 0)
        step = steps.get(shape)
        if step is not None:  # shapes never change in the decode loop: skip re-checking the guards at every token
            with torch.compiler.set_stance("default", skip_guard_eval_unsafe=True):
                logits = step(model, ids, cache)
        else:
            step = _compiled_step(model, products, options, version, shape)
            with tracing(options):  # a new step traces on this call
                logits = step(model, ids, cache)
            steps[shape] = step
        cache.advance(ids.shape[1])
        return logits

    return run


@torch.inference_mode()
def generate(model, prompts: list[list[int]], max_new_tokens: int, sampling: Sampling = Sampling(),
             seed: int | None = None, eos_id: int | None = None, use_cache: bool = True,
             device: torch.device | None = None, compile: bool = False, products: str = "blas") -> list[list[int]]:
    r"""Continue each prompt; returns the new tokens of each (the ``<eos>`` that stopped it included).

    ``compile`` runs the cached one-token step through ``torch.compile`` (worth it for long outputs), its
    few-row products as ``products`` says (:func:`decode_step`). This call never changes torch's thread count:
    the process's owner sets it (``seqlab generate --threads``).

    ``model(ids (batch, seq), cache=None) -> logits (batch, seq, vocab)`` with ``model.cfg.max_len``
    and ``model.new_cache(batch, device, dtype)`` (seqlab.models.transformer.TransformerLM).

    !!! equation "Recurrent neural networks › One to many (beyond the notes)"
        $\hat{y}_t \sim p(\cdot \mid x, \hat{y}_1, \dots, \hat{y}_{t-1})$: one input (the prompt) and many
        outputs, each token drawn from the model's distribution (the argmax at temperature 0; ``top_k``,
        ``top_p`` cut it) and fed back as the next input, until $\langle eos \rangle$ or ``max_new_tokens``.

    !!! equation "Word embeddings › Neural language model"
        $p(x_t \mid x_{t-n}, \dots, x_{t-1}),\ n = \mathrm{max\_len}$: a fixed window of the previous words, as
        in the notes' neural language model: once prompt and output pass the model's ``max_len`` tokens, each
        step reads only the last ``max_len`` (the window slides); the network that reads them is the model's
        own (an RNN or a Transformer).

    !!! departure "Word embeddings › Neural language model"
        notes: a fixed-window neural language model, the embeddings of the previous $n$ words concatenated
        (input $\in \mathbb{R}^{1200}$) into a hidden layer and a softmax over the vocabulary.
        seqlab: no such model. Its language models (RNN, GRU, LSTM, Transformer) read up to ``model.max_len``
        previous tokens, a window that slides in generation; its word vectors come from word2vec and GloVe,
        the models the notes turn to next.
    """
    check_length(max_new_tokens, seed)
    if any(len(p) == 0 for p in prompts):
        raise SeqlabError(f"an empty prompt has no token to condition on; give {spelled('prompt')} some text")
    device = device or next(model.parameters()).device
    return _generate(model, prompts, max_new_tokens, sampling, seed, eos_id, use_cache, device, compile, products)


def _generate(model, prompts, max_new_tokens, sampling, seed, eos_id, use_cache, device, compile, products):
    out: list[list[int]] = [[] for _ in prompts]
    for index in prompt_groups(model, prompts, max_new_tokens, use_cache):
        longest = max(len(prompts[i]) for i in index)
        pads = [longest - len(prompts[i]) for i in index]
        rows = [[0] * pad + prompts[i] for pad, i in zip(pads, index)]  # left-padded with token 0 (masked)
        ids = torch.tensor(rows, dtype=torch.long, device=device)  # (batch, seq)
        generators = [torch.Generator(device=device).manual_seed(0 if seed is None else seed) for _ in index]
        new = _generate_group(model, ids, max_new_tokens, sampling, generators, eos_id, use_cache,
                              decode_step(model, compile and use_cache, products), pads if any(pads) else None)
        for row, i in enumerate(index):
            out[i] = new[row]
    return out


def prompt_groups(model, prompts: list[list[int]], max_new_tokens: int, use_cache: bool) -> list[list[int]]:
    """The prompt indices decoded together: all of them, left-padded, when the model has a static cache
    (``step``) whose slots hold the longest prompt and every fed token; else groups of equal length."""
    if not prompts:
        return []
    longest = max(len(p) for p in prompts)
    if use_cache and hasattr(model, "step") and longest + max_new_tokens - 1 <= model.cfg.max_len:
        return [list(range(len(prompts)))]
    groups: dict[int, list[int]] = defaultdict(list)
    for i, p in enumerate(prompts):
        groups[len(p)].append(i)
    return [groups[length] for length in sorted(groups)]


def _generate_group(model, ids: torch.Tensor, max_new_tokens: int, sampling: Sampling,
                    generators: list[torch.Generator], eos_id: int | None, use_cache: bool, step,
                    pads: list[int] | None = None) -> list[list[int]]:
    """Decode one batch; ``pads`` (one per row) counts each row's left padding (then the rows fit the cache)."""
    max_len = model.cfg.max_len
    batch = ids.size(0)
    finished = torch.zeros(batch, dtype=torch.bool, device=ids.device)
    generated: list[torch.Tensor] = []
    cache = None
    window = ids[:, -max_len:]  # (batch, seq<=max_len): the most recent tokens
    if use_cache:
        cache = model.new_cache(batch, device=ids.device, dtype=next(model.parameters()).dtype)
        if pads is not None:
            cache.pad_left(torch.tensor(pads))
    logits = model(window, cache=cache)[:, -1]  # (batch, vocab)
    for _ in range(max_new_tokens):
        token = next_token(logits, sampling, generators)  # (batch,)
        if eos_id is not None:
            token = torch.where(finished, torch.full_like(token, eos_id), token)
        generated.append(token)
        if eos_id is not None:
            finished |= token == eos_id
            if bool(finished.all()):
                break
        if len(generated) == max_new_tokens:
            break
        window = torch.cat([window, token[:, None]], dim=1)[:, -max_len:]  # (batch, seq<=max_len)
        if cache is not None and cache.pos < max_len:
            logits = step(token[:, None], cache=cache)[:, -1]
        else:  # no cache, or the window slid: recompute on the last max_len tokens
            logits = model(window)[:, -1]
    if not generated:
        return [[] for _ in range(batch)]
    tokens = torch.stack(generated, dim=1).tolist()  # (batch, new)
    if eos_id is None:
        return tokens
    return [row[: row.index(eos_id) + 1] if eos_id in row else row for row in tokens]


@torch.inference_mode()
def stream(model, prompt: list[int], max_new_tokens: int, sampling: Sampling = Sampling(), seed: int | None = None,
           eos_id: int | None = None, device: torch.device | None = None):
    """Continue one prompt token by token: yields ``(token, probs)`` as each token is chosen, ``probs`` (vocab,)
    being the model's distribution p(x_t | x_<t) (softmax of the raw logits, before temperature and filters).

    The tokens are those of :func:`generate` for the same prompt, sampling and seed (the same cached steps, the
    same window once it slides, the same random stream), so a page that streams shows what ``seqlab generate``
    prints."""
    check_length(max_new_tokens, seed)
    if not prompt:
        raise SeqlabError(f"an empty prompt has no token to condition on; give {spelled('prompt')} some text")
    device = device or next(model.parameters()).device
    max_len = model.cfg.max_len
    generators = [torch.Generator(device=device).manual_seed(0 if seed is None else seed)]
    window = torch.tensor([prompt], dtype=torch.long, device=device)[:, -max_len:]  # (1, seq<=max_len)
    cache = model.new_cache(1, device=device, dtype=next(model.parameters()).dtype)
    step = decode_step(model)
    logits = model(window, cache=cache)[:, -1]  # (1, vocab)
    for n in range(1, max_new_tokens + 1):
        token = next_token(logits, sampling, generators)  # (1,)
        yield int(token), torch.softmax(logits[0].float(), dim=-1)
        if (eos_id is not None and int(token) == eos_id) or n == max_new_tokens:
            return
        window = torch.cat([window, token[:, None]], dim=1)[:, -max_len:]  # (1, seq<=max_len)
        if cache.pos < max_len:
            logits = step(token[:, None], cache=cache)[:, -1]
        else:  # the window slid: recompute on the last max_len tokens, as generate does
            logits = model(window)[:, -1]
