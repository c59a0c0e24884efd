"""Translation (notes: Sequence to sequence › Encoder-decoder): p(y | x) of a target sentence
given a source sentence, trained with the average token-level NLL under teacher forcing.

Examples (ids from :mod:`seqlab.data.parallel`'s tokenizers):
    source      x_1 .. x_m <eos>        (the <eos> marks the end for the encoder)
    decoder in  <sos> y_1 .. y_n        targets  y_1 .. y_n <eos>   (the notes' <sos> and <eos>)
Sentence pairs whose source (with <eos>) or target (with <sos>/<eos>) exceeds ``model.max_len`` are
left out of training and validation, and the number left out is logged. The train and valid pairs are
streamed from the files (:func:`seqlab.data.parallel.stream_parallel`) into indexed token stores in the run
directory (``RUN/data/{train,valid}.{src,tgt}.bin/.idx``, :mod:`seqlab.data.indexed`, reused on ``--resume``)
and batches gather from their memory maps: memory is the index, not the text. ``evaluate`` encodes the
sources of the split it scores the same way into a temporary folder (the references, text, are
streamed from the files for BLEU). At prediction a source longer
than ``model.max_len`` is refused (never silently truncated), naming the line.

Training batches are drawn with the data generator only (:func:`seqlab.data.batching.sample_batch`): a pool of
``POOL_BATCHES * n`` random pair indices, sorted by length, of which a random run of ``n`` consecutive pairs is the
batch (little padding, no state besides the generator, so ``--resume`` continues bit-for-bit). The loss is summed
over real target tokens and divided by their count (the Trainer).

Decoding: :mod:`seqlab.decoding.beam`, beam size ``DEFAULT_BEAM`` with the GNMT length penalty alpha
``DEFAULT_ALPHA`` unless told otherwise (``beam=1`` is greedy); ``evaluate`` scores the detokenised
translations of a split with corpus BLEU (sacreBLEU-identical, 13a, :mod:`seqlab.metrics.bleu`) against
the raw reference lines. Words not in a word/char vocabulary read as ``<unk>`` (byte-level BPE has none).

Word vectors: ``model.vectors`` starts E_src and ``model.tgt_vectors`` E_tgt (a tied W_o with it) by the tokens'
text, exact else case-folded (:func:`seqlab.vectors.start.init_embeddings`); ``model.freeze_vectors`` keeps
them fixed. A BPE or char vocabulary's pieces are rarely words: the coverage logged for each side says how many.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple, cast

import numpy as np
import torch
from torch import Tensor, nn

from seqlab.training import checkpoint
from seqlab.decoding.beam import DEFAULT_ALPHA, Hypothesis, translate_ids
from seqlab.base.config import RunConfig
from seqlab.data.batching import pad_batch, sample_batch, spread_batches
from seqlab.data.indexed import lengths_of
from seqlab.data.parallel import encode_lines, joint_vocab, read_splits, stream_parallel, train_tokenizers
from seqlab.data.streamed import Streamed, chunks
from seqlab.base.errors import SeqlabError, named
from seqlab.metrics.lm import nll_sum, perplexity
from seqlab.models.seq2seq import Seq2SeqAttention, Seq2SeqConfig
from seqlab.models.transformer import EncoderDecoder, EncoderDecoderConfig
from seqlab.text.tokenizers import Tokenizer, load_tokenizer
from seqlab.training.devices import Dist, inference_device
from seqlab.tasks.results import TranslationAttention
from seqlab.tasks.splits import scratch_run_dir, split_stores, spooled
from seqlab.training.trainer import RUN_KEYS, Trainer, shard_rows
from seqlab.tasks.trained import Trained, texts_given
from seqlab.vectors.start import Side, start_vectors, token_texts

MODEL_CONFIGS = {"seq2seq-attention": Seq2SeqConfig, "transformer": EncoderDecoderConfig}
TRAIN_KEYS = (*RUN_KEYS, "label_smoothing")  # the train.* keys used: the Trainer's and the loss's
BEST_BY = ("loss", "bleu")  # what train.best_by may name (BLEU of greedy translations: computed when chosen)
MODELS: dict[str, type[Seq2SeqAttention] | type[EncoderDecoder]] = {"seq2seq-attention": Seq2SeqAttention,
                                                                     "transformer": EncoderDecoder}
SRC_TOKENIZER, TGT_TOKENIZER = "src_tokenizer.json", "tgt_tokenizer.json"
DEFAULT_BEAM = 5  # beam size of predict / evaluate / attention when none is given
DECODE_BATCH = 64  # sentences decoded together
StreamedPairs = dict[str, Streamed[tuple[str, str]]]  # split -> pairs, as read_splits(reader=stream_parallel) gives


# ------------------------------------------------------------------------------------------------------
# data


@dataclass
class Examples:
    """Encoded pairs: ``src[i]`` ends with <eos>; ``tgt[i]`` has neither <sos> nor <eos>. Lists of id lists, or
    the memory-mapped stores of a split (:class:`~seqlab.data.indexed.IndexedArrays`)."""

    src: Sequence[Sequence[int]]
    tgt: Sequence[Sequence[int]]

    def __len__(self) -> int:
        return len(self.src)


class Batch(NamedTuple):
    src: Tensor  # batch, src
    src_mask: Tensor  # batch, src: True = real token
    tgt_in: Tensor  # batch, tgt: <sos> y_1 .. y_n
    tgt_out: Tensor  # batch, tgt: y_1 .. y_n <eos>
    tgt_mask: Tensor  # batch, tgt: True = real target token



def save_tokenizers(run_dir: Path, src_tok: Tokenizer, tgt_tok: Tokenizer) -> None:
    src_tok.save(run_dir / SRC_TOKENIZER)
    tgt_tok.save(run_dir / TGT_TOKENIZER)


def load_tokenizers(run_dir: Path) -> tuple[Tokenizer, Tokenizer]:
    src_tok = load_tokenizer(run_dir / SRC_TOKENIZER)
    tgt_tok = load_tokenizer(run_dir / TGT_TOKENIZER)
    for name, tok in (("source", src_tok), ("target", tgt_tok)):
        if tok.sos_id is None or tok.eos_id is None:
            raise SeqlabError(f"the {name} tokenizer of {run_dir} has no <sos>/<eos>; retrain the run")
    return src_tok, tgt_tok


def encoded_pairs(pairs: Iterable[tuple[str, str]], src_tok: Tokenizer, tgt_tok: Tokenizer,
                  max_len: int) -> Iterator[dict | None]:
    """Each pair's ``{"src": ids + [<eos>], "tgt": ids}``, or None when the source (with <eos>) or the decoder
    input (<sos> + target) does not fit in max_len; streamed, a chunk of pairs at a time."""
    for chunk in chunks(pairs):
        sources = encode_lines(src_tok, [s for s, _ in chunk])
        targets = encode_lines(tgt_tok, [t for _, t in chunk])
        for s, t in zip(sources, targets):
            s.append(cast(int, src_tok.eos_id))  # load_tokenizers checked it
            yield {"src": s, "tgt": t} if len(s) <= max_len and len(t) < max_len else None


def prepare_data(cfg: RunConfig, run_dir: Path, dist: Dist, log=print):
    """Tokenizers (learned once per run directory, then reloaded) and the encoded train/valid pairs, streamed from
    the files into the run's token stores (RUN/data, reused on --resume) and memory-mapped."""
    corpora = cast(StreamedPairs, read_splits(cfg.data, ("train", "valid"), reader=stream_parallel))
    if dist.main and not (run_dir / TGT_TOKENIZER).exists():
        save_tokenizers(run_dir, *train_tokenizers(cfg.data, corpora["train"]))
    dist.barrier()  # rank 0 wrote the tokenizers; every rank reads the same files
    src_tok, tgt_tok = load_tokenizers(run_dir)
    bounds = {"src": src_tok.vocab_size, "tgt": tgt_tok.vocab_size}
    examples = {}
    stores = split_stores(cfg, run_dir, corpora, bounds,
                          lambda pairs: encoded_pairs(pairs, src_tok, tgt_tok, cfg.model.max_len), dist)
    for split, (store, record) in stores.items():
        examples[split] = Examples(store["src"], store["tgt"])
        if record["dropped"]:
            log(f"{split}: left out {record['dropped']} of {len(corpora[split])} pairs longer than "
                f"model.max_len={cfg.model.max_len}")
    if not len(examples["train"]):
        raise SeqlabError(f"no training pair fits in model.max_len={cfg.model.max_len}; raise model.max_len")
    return src_tok, tgt_tok, examples


def collate(examples: Examples, index: list[int], sos_id: int, eos_id: int, pad_id: int) -> Batch:
    src, src_mask = pad_batch([examples.src[i] for i in index], pad_id)  # batch, src
    targets = [np.asarray(examples.tgt[i], dtype=np.int64) for i in index]
    # pad_batch reads arrays too: its Sequence[Sequence[int]] annotation leaves out ndarray (seqlab/data/batching.py)
    tgt_in, tgt_mask = pad_batch([np.concatenate(([sos_id], t)) for t in targets], pad_id)  # type: ignore[misc]
    tgt_out, _ = pad_batch([np.concatenate((t, [eos_id])) for t in targets], pad_id)  # type: ignore[misc]
    return Batch(src, src_mask, tgt_in, tgt_out, tgt_mask)


def build_model(cfg: RunConfig, src_tok: Tokenizer, tgt_tok: Tokenizer) -> Seq2SeqAttention | EncoderDecoder:
    """The configured model with the vocabulary sizes of the data."""
    if getattr(cfg.model, "share_embeddings", False) and not joint_vocab(cfg.data):
        raise SeqlabError("model.share_embeddings needs one vocabulary for both languages; set data.joint_vocab=true "
                          "or model.share_embeddings=false")
    model_cfg = replace(cfg.model, src_vocab_size=src_tok.vocab_size, tgt_vocab_size=tgt_tok.vocab_size)
    model = MODELS[cfg.arch](model_cfg)
    if model_cfg.freeze_vectors:  # fixed from the start, so also on --resume and at load (as the tagger's E)
        for side in model_cfg.vector_sides():
            token_embeddings(model)[side].weight.requires_grad_(False)
    return model


def token_embeddings(model: Seq2SeqAttention | EncoderDecoder) -> dict[str, nn.Embedding]:
    """{"source": E_src, "target": E_tgt} of either arch (one matrix twice under model.share_embeddings)."""
    if isinstance(model, Seq2SeqAttention):
        return {"source": model.encoder.embed, "target": model.decoder.embed}
    return {"source": model.src_embed.tokens, "target": model.tgt_embed.tokens}


def vector_sides(cfg: RunConfig, model: Seq2SeqAttention | EncoderDecoder, tokenizers: dict[str, Tokenizer]) -> list[Side]:
    """E_src / E_tgt with the vectors model.vectors / model.tgt_vectors name for them, for
    :func:`seqlab.vectors.start.start_vectors` (each side's coverage logged as its tokens' kind)."""
    return [Side("model.vectors" if side == "source" else "model.tgt_vectors", path, token_embeddings(model)[side],
                 token_texts(tokenizers[side]), f"{side} {tokenizers[side].kind} tokens",
                 cfg.train.seed + (side == "target")) for side, path in cfg.model.vector_sides().items()]


# ------------------------------------------------------------------------------------------------------
# the training task


class TranslateTask:
    """Plugs translation into :class:`seqlab.training.trainer.Trainer`."""

    def __init__(self, model: nn.Module, train: Examples, valid: Examples, tgt_tok: Tokenizer, eval_batch_size: int,
                 label_smoothing: float = 0.0, bleu: bool = False):
        self.model, self.train, self.valid, self.tgt_tok = model, train, valid, tgt_tok
        self.label_smoothing = label_smoothing
        self.bleu = bleu  # validation also translates (greedy) and scores BLEU: train.best_by = "bleu"
        self.special: dict[str, Any] = dict(sos_id=tgt_tok.sos_id, eos_id=tgt_tok.eos_id, pad_id=tgt_tok.pad_id)
        src_len, tgt_len = lengths_of(train.src), lengths_of(train.tgt)  # pairs
        self.train_tokens = int((tgt_len + 1).sum())  # target tokens (with <eos>) per epoch
        self.lengths = torch.from_numpy(np.maximum(src_len, tgt_len + 1))  # pairs
        self.eval_batch_size = eval_batch_size

    def train_batch(self, generator: torch.Generator, n: int) -> Batch:
        return collate(self.train, sample_batch(self.lengths, n, generator), **self.special)

    def shard(self, batch, rank: int, world: int):
        return shard_rows(batch, rank, world)

    def count(self, batch: Batch) -> int:
        return int(batch.tgt_mask.sum())

    def loss_sum(self, model: nn.Module, batch: Batch, device: torch.device) -> Tensor:
        src, src_mask, tgt_in, tgt_out, tgt_mask = (t.to(device, non_blocking=True) for t in batch)
        # no target padding mask: padding follows the real tokens, which the causal mask already hides it from
        logits = model(src, tgt_in, src_mask)  # batch, tgt, vocab
        return nll_sum(logits, tgt_out, tgt_mask, self.label_smoothing)[0]

    def validate(self, model: nn.Module, device: torch.device, max_batches: int | None) -> dict[str, float]:
        """Teacher-forced NLL per target token and perplexity; with ``bleu``, the corpus BLEU of greedy
        translations of the same sentences (all, or ``max_batches`` batches spread over the split)."""
        total, count = score_examples(model, self.valid, self.special, self.eval_batch_size, device, max_batches)
        result = {"loss": total / count if count else math.nan, "perplexity": perplexity(total, count)}
        if self.bleu:
            result["bleu"] = validation_bleu(model, self.valid, self.tgt_tok, self.eval_batch_size, device,
                                             max_batches)
        return result


@torch.no_grad()
def validation_bleu(model: nn.Module, examples: Examples, tgt_tok: Tokenizer, batch_size: int,
                    device: torch.device, max_batches: int | None = None) -> float:
    """Corpus BLEU (13a) of greedy translations of ``examples`` (or ``max_batches`` batches of them, spread
    evenly) against their references decoded from the token ids (the detokenised text the tokenizer gives
    back: close to, not always equal to, the raw references that ``evaluate`` scores)."""
    from seqlab.metrics.bleu import corpus_bleu

    chosen = [i for batch in spread_batches(list(range(len(examples))), batch_size, max_batches) for i in batch]
    if not chosen:
        return math.nan
    sos, eos = cast(int, tgt_tok.sos_id), cast(int, tgt_tok.eos_id)
    hyps = translate_ids(model, [examples.src[i] for i in chosen], sos_id=sos, eos_id=eos, pad_id=tgt_tok.pad_id,
                         beam=1, batch_size=DECODE_BATCH, device=device)
    refs = [tgt_tok.decode(examples.tgt[i]) for i in chosen]
    return corpus_bleu([tgt_tok.decode(h.tokens) for h in hyps], [refs]).score


@torch.no_grad()
def score_examples(model: nn.Module, examples: Examples, special: dict, batch_size: int, device: torch.device,
                   max_batches: int | None = None) -> tuple[float, int]:
    """(sum of target-token NLL, number of target tokens) under teacher forcing, in length-sorted batches;
    with ``max_batches``, that many batches spread evenly over the split."""
    src_len, tgt_len = lengths_of(examples.src), lengths_of(examples.tgt)  # pairs
    order = np.lexsort((np.arange(len(examples)), src_len, tgt_len)).tolist()  # by target, source length, index
    batches = spread_batches(order, batch_size, max_batches)
    total, count = 0.0, 0
    for index in batches:
        src, src_mask, tgt_in, tgt_out, tgt_mask = (t.to(device) for t in collate(examples, index, **special))
        s, c = nll_sum(model(src, tgt_in, src_mask), tgt_out, tgt_mask)
        total += float(s)
        count += c
    return total, count


def train(cfg: RunConfig, run_dir: Path, *, resume: bool, dist: Dist, log=print) -> dict:
    torch.manual_seed(cfg.train.seed)  # the initial weights
    src_tok, tgt_tok, examples = prepare_data(cfg, run_dir, dist, log)
    model = build_model(cfg, src_tok, tgt_tok)
    if not (resume and checkpoint.exists(run_dir)):  # a resumed run's checkpoint has E_src and E_tgt
        start_vectors(vector_sides(cfg, model, {"source": src_tok, "target": tgt_tok}), cfg.model.freeze_vectors, log)
    log(f"model: {cfg.arch}, {model.num_params() / 1e6:.2f}M parameters; pairs: train {len(examples['train']):,}, "
        f"valid {len(examples['valid']):,}; vocabulary {src_tok.vocab_size:,} source, {tgt_tok.vocab_size:,} target")
    task = TranslateTask(model, examples["train"], examples["valid"], tgt_tok,
                         eval_batch_size=max(1, cfg.train.batch_size // cfg.train.grad_accum),
                         label_smoothing=cfg.train.label_smoothing, bleu=cfg.train.best_by == "bleu")
    return Trainer(task, cfg.train, run_dir, dist=dist, log=log).run(resume)


# ------------------------------------------------------------------------------------------------------
# a trained translator


class Translator(Trained):
    """A trained translation model loaded from a run directory: ``translate`` (text), ``hypotheses`` (ids and
    scores), ``evaluate``, ``attention``, and ``predict`` (the ``seqlab predict`` results)."""

    def __init__(self, run_dir: Path, cfg: RunConfig, src_tok: Tokenizer, tgt_tok: Tokenizer,
                 model: Seq2SeqAttention | EncoderDecoder, device: torch.device):
        self.run_dir, self.config, self.model, self.device = run_dir, cfg, model, device
        self.src_tok, self.tgt_tok = src_tok, tgt_tok

    def encode_sources(self, lines: list[str], where: str = "input line", first: int = 1) -> list[list[int]]:
        """Source ids (with <eos>); a source longer than max_len is refused, naming its line (the first one
        ``first``)."""
        max_len = self.model.cfg.max_len
        eos = cast(int, self.src_tok.eos_id)  # load_tokenizers checked it
        ids = [i + [eos] for i in encode_lines(self.src_tok, list(lines))]
        for number, seq in enumerate(ids, start=first):
            if len(seq) > max_len:
                raise SeqlabError(f"{where} {number} has {len(seq)} tokens (with <eos>), more than model.max_len="
                                  f"{max_len}; split it into shorter sentences")
        return ids

    def hypotheses(self, lines: list[str], beam: int | None = None, alpha: float = DEFAULT_ALPHA,
                   where: str = "input line") -> list[Hypothesis]:
        """The best hypothesis (ids, score) for each source line (an empty line gives an empty translation);
        ``where`` names a line in messages."""
        beam = DEFAULT_BEAM if beam is None else beam
        if beam < 1:
            raise SeqlabError(f"beam must be >= 1 (1 = greedy), got {beam}")
        lines = list(lines)
        real = [i for i, line in enumerate(lines) if line.strip()]
        sources = self.encode_sources([lines[i] for i in real], where)
        tok = self.tgt_tok
        sos, eos = cast(int, tok.sos_id), cast(int, tok.eos_id)  # load_tokenizers checked them
        hyps = translate_ids(self.model, sources, sos_id=sos, eos_id=eos, pad_id=tok.pad_id,
                             beam=beam, alpha=alpha, batch_size=DECODE_BATCH, device=self.device)
        out = [Hypothesis([], 0.0, 0.0, True)] * len(lines)
        for i, h in zip(real, hyps):
            out[i] = h
        return out

    def translate(self, sentences: str | Iterable[str], beam: int | None = None,
                  alpha: float = DEFAULT_ALPHA) -> str | list[str]:
        """The translation of each sentence (beam search, GNMT length penalty ``alpha``; ``beam=1`` is greedy):
        a str for a str, a list for a list; an empty sentence translates to "". :meth:`hypotheses` gives the
        ids and scores."""
        single, lines = texts_given(sentences, "sentence")
        texts = [self.tgt_tok.decode(h.tokens) for h in self.hypotheses(lines, beam, alpha, where="sentence")]
        return texts[0] if single else texts

    def predict(self, lines: list[str] | None, beam: int | None = None) -> list[dict]:
        """One result per input line: ``{"source", "translation", "score"}`` (score: normalised log-prob)."""
        if lines is None:
            raise SeqlabError(f"translation reads source sentences from stdin, one per line; {named('steps')} "
                              "is for forecasting")
        hyps = self.hypotheses(lines, beam)
        return [self.result(line, h) for line, h in zip(lines, hyps)]

    def result(self, line: str, hyp: Hypothesis) -> dict:
        """``{"source", "translation", "score"}`` of one hypothesis (score: normalised log-prob)."""
        return {"source": line, "translation": self.tgt_tok.decode(hyp.tokens), "score": hyp.score}

    def format_prediction(self, result: dict) -> str:
        return result["translation"]

    def evaluate(self, split: str = "test", beam: int | None = None, alpha: float = DEFAULT_ALPHA, *,
                 data: Iterable[tuple[str, str]] | None = None) -> dict:
        """Corpus BLEU (sacreBLEU-identical, 13a) of the split's translations: ``{"bleu", "signature"}``; with
        ``data``, of (source, reference) pairs in memory instead (written as a parallel file pair and read as
        a split is)."""
        beam = DEFAULT_BEAM if beam is None else beam
        if beam < 1:
            raise SeqlabError(f"beam must be >= 1 (1 = greedy), got {beam}")
        if data is None:
            if split not in ("valid", "test"):
                raise SeqlabError(f"unknown split {split!r}; evaluate valid or test")
            pairs = cast(StreamedPairs, read_splits(self.config.data, (split,), reader=stream_parallel))[split]
            return self._bleu(pairs, split, beam, alpha)
        with spooled("translate", data, "data") as prefix:
            return self._bleu(stream_parallel(prefix, "src", "tgt"), "data", beam, alpha)

    def _bleu(self, pairs: Streamed[tuple[str, str]], name: str, beam: int, alpha: float) -> dict:
        """``{"bleu", "signature"}`` of the pairs' translations; ``name`` (the split) names a sentence in
        messages."""
        from seqlab.metrics.bleu import corpus_bleu

        def sources(pairs: Iterable[tuple[str, str]]) -> Iterator[dict]:  # a source too long: an error naming it
            done = 0
            for chunk in chunks(pairs):
                for ids in self.encode_sources([s for s, _ in chunk], f"{name} sentence", first=done + 1):
                    yield {"src": ids}
                done += len(chunk)

        tok = self.tgt_tok
        with scratch_run_dir() as scratch:
            store, _ = split_stores(self.config, scratch, {f"eval-{name}": pairs},
                                    {"src": self.src_tok.vocab_size}, sources)[f"eval-{name}"]
            sos, eos = cast(int, tok.sos_id), cast(int, tok.eos_id)  # load_tokenizers checked them
            hyps = translate_ids(self.model, store["src"], sos_id=sos, eos_id=eos, pad_id=tok.pad_id,
                                 beam=beam, alpha=alpha, batch_size=DECODE_BATCH, device=self.device)
        score = corpus_bleu([tok.decode(h.tokens) for h in hyps], [[t for _, t in pairs]])
        return {"bleu": score.score, "signature": score.signature}

    def _token_strings(self, tok: Tokenizer, ids: list[int]) -> list[str]:
        return ["<eos>" if i == tok.eos_id else tok.decode([i]) for i in ids]

    @torch.no_grad()
    def attention(self, text: str, beam: int | None = None,
                  hypothesis: Hypothesis | None = None) -> TranslationAttention:
        """Translate ``text`` and return its :class:`~seqlab.tasks.results.TranslationAttention` (source tokens,
        output tokens, weights (heads or 1, tgt, src)), which unpacks as ``src, tgt, weights`` and plots.

        ``hypothesis``: the translation of ``text`` already found by :meth:`hypotheses` (the beam search is not
        run again).

        Row i of the weights is the attention of the step that produced output token i (the last one is
        <eos> when the translation finished); column j is source token j (the last is <eos>).
        Seq2seq: alpha of the additive attention (one map). Transformer: the cross-attention of the last
        decoder layer, one map per head.
        """
        if not text.strip():
            raise SeqlabError("the text is empty; give a source sentence")
        src_ids = self.encode_sources([text], where="sentence")[0]
        hyp = hypothesis if hypothesis is not None else self.hypotheses([text], beam)[0]
        out_ids = hyp.tokens + ([cast(int, self.tgt_tok.eos_id)] if hyp.finished else [])
        src = torch.tensor([src_ids], device=self.device)  # 1, src
        tgt_in = torch.tensor([[self.tgt_tok.sos_id] + out_ids[:-1]], device=self.device)  # 1, tgt
        if isinstance(self.model, Seq2SeqAttention):
            weights = self.model.attention_maps(src, tgt_in)  # 1, tgt, src
        else:
            memory = self.model.encode(src)  # 1, src, d_model
            weights = self.model.decode_with_weights(tgt_in, memory).cross_attn[-1][0]  # head, tgt, src
        return TranslationAttention(self._token_strings(self.src_tok, src_ids),
                                    self._token_strings(self.tgt_tok, out_ids), weights.float().cpu())


def load(run_dir: Path, cfg: RunConfig, device: str | torch.device | None = None, weights: Path | None = None) -> Translator:
    device = inference_device(device)
    src_tok, tgt_tok = load_tokenizers(run_dir)
    model = build_model(cfg, src_tok, tgt_tok)
    checkpoint.load_model(model, (weights or run_dir) / "model.safetensors")
    model.to(device).eval()
    return Translator(run_dir, cfg, src_tok, tgt_tok, model, device)
