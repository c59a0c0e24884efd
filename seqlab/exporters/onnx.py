"""ONNX files (torch.export-based exporter, onnxscript), checked with onnxruntime before they are kept.

The graphs, all with dynamic ``batch`` and ``seq`` axes (``seq`` at most the model's ``max_len``):

- language model      ``input_ids`` (batch, seq) int64 -> ``logits`` (batch, seq, vocab)
- tagger              ``input_ids``, ``attention_mask`` (batch, seq) int64 -> ``logits`` (batch, seq, labels)
- classifier          ``input_ids``, ``attention_mask`` -> ``logits`` (batch, classes)
- sentence encoder    ``input_ids``, ``attention_mask`` -> ``sentence_embedding`` (batch, dim): mean-pooled over
                      the real tokens, L2-normalised (what ``seqlab embed`` prints)

``attention_mask`` is 1 for a real token and 0 for padding, as transformers' tokenizers return it. The file's
metadata carries what is needed to feed it: ``tokenizer`` (a Hugging Face ``tokenizer.json``, for
``tokenizers.Tokenizer.from_str``) or ``vocab`` (a JSON token list: the word-level taggers and classifiers,
which split at whitespace), ``labels`` (a JSON list, id order) and ``seqlab.model``.

After the export, onnxruntime runs the file on two batches of other shapes (padded where there is a mask)
and its outputs are compared with seqlab's; a difference above :data:`TOLERANCE` (relative to the largest
output) refuses the file.

Shapes: batch; seq; vocab; labels; classes; dim.
"""

from __future__ import annotations

import contextlib
import json
import logging
import warnings
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqlab.base.errors import SeqlabError

TOLERANCE = 1e-4  # largest |onnxruntime - seqlab| allowed, times max(1, largest |output|)
MAX_BYTES = 2 * 1024**3 - 64 * 1024**2  # one ONNX (protobuf) file holds at most 2 GiB


# ------------------------------------------------------------------------------------------------------
# the graphs: thin modules with the exported signature, no data-dependent Python branches


class LMGraph(nn.Module):
    """input_ids (batch, seq) -> logits (batch, seq, vocab): the language model's forward pass."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: Tensor) -> Tensor:
        return self.model(input_ids)  # batch, seq, vocab


def _bert_states(encoder, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
    """The BERT encoder's last hidden states (batch, seq, d_model), always through the padding mask
    (``BertEncoder.encode`` skips an all-real mask, a branch on the data that a graph cannot keep)."""
    return encoder.encoder(encoder.embed(input_ids), attention_mask.bool())  # batch, seq, d_model


class SentenceEmbeddingGraph(nn.Module):
    """(input_ids, attention_mask) -> unit(mean of the real tokens' states) (batch, dim)."""

    def __init__(self, encoder) -> None:
        super().__init__()
        self.encoder = encoder

    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        from seqlab.models.pretrained import mean_pool

        h = _bert_states(self.encoder, input_ids, attention_mask)  # batch, seq, dim
        return F.normalize(mean_pool(h, attention_mask), p=2, dim=-1)  # batch, dim


class FineTunedGraph(nn.Module):
    """(input_ids, attention_mask) -> logits of a head on a pretrained encoder (TokenClassifier or
    SequenceClassifier, eval mode: dropout is the identity)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        from seqlab.models.pretrained_heads import TokenClassifier
        from seqlab.models.pretrained import mean_pool

        m = self.model
        h = _bert_states(m.encoder, input_ids, attention_mask)  # batch, seq, d_model
        if isinstance(m, TokenClassifier):
            return m.head(h)  # batch, seq, labels
        if m.pooler is not None:
            return m.head(torch.tanh(m.pooler(h[:, 0])))  # batch, classes
        return m.head(mean_pool(h, attention_mask))  # batch, classes


class MaskedGraph(nn.Module):
    """(input_ids, attention_mask) -> model(input_ids, padding): seqlab's own taggers and classifiers."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        return self.model(input_ids, attention_mask.bool())


# ------------------------------------------------------------------------------------------------------
# export + check


@contextlib.contextmanager
def _quiet():
    """torch.onnx logs warnings (e.g. about torchvision's operators) that are no concern of an export."""
    loggers = [logging.getLogger(name) for name in ("torch.onnx", "torch.export", "torch._dynamo", "onnxscript")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's own deprecations and axis-naming notes inside the exporter
            yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def _export(graph: nn.Module, example: dict[str, Tensor], output: str, max_len: int | None, path: Path,
            metadata: dict[str, str]) -> None:
    size = sum(p.numel() * p.element_size() for p in graph.parameters())
    if size > MAX_BYTES:
        raise SeqlabError(f"the model has {size / 1024**3:.1f} GiB of weights, more than one ONNX file holds (2 GiB)")
    graph = graph.float().eval()
    batch = torch.export.Dim("batch")
    seq = torch.export.Dim("seq") if max_len is None else torch.export.Dim("seq", max=max_len)
    dynamic = {name: {0: batch, 1: seq} for name in example}
    try:
        with _quiet(), torch.no_grad():
            program = torch.onnx.export(graph, (), kwargs=example, input_names=list(example),
                                        output_names=[output], dynamic_shapes=dynamic, dynamo=True, verbose=False)
    except Exception as e:  # the exporter raises many types; the first line says what it could not convert
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise SeqlabError(f"could not convert {type(graph.model if hasattr(graph, 'model') else graph).__name__} "
                          f"to ONNX: {first[:300]}") from None
    for key, value in metadata.items():
        program.model.metadata_props[key] = value
    _name_axes(program.model)
    program.save(str(path), external_data=False)


def _name_axes(model) -> None:
    """Outputs' batch and seq axes named as the inputs'. Behind an LSTM the exporter writes the example's
    length into the shapes it records (the graph itself is dynamic), which onnxruntime then reports and warns
    about on every other length: those intermediate shapes are dropped (onnxruntime infers its own)."""
    import onnx_ir as ir

    batch, seq = model.graph.inputs[0].shape.dims[:2]
    outputs = set(model.graph.outputs)
    for node in model.graph:
        for value in node.outputs:
            if value not in outputs:
                value.shape = None
    for value in model.graph.outputs:
        dims = list(value.shape.dims)  # (batch, seq, features) or (batch, features)
        dims[0] = batch
        if len(dims) == 3:
            dims[1] = seq
        value.shape = ir.Shape(dims)


def _check(graph: nn.Module, path: Path, inputs: list[dict[str, Tensor]]) -> float:
    """Run the file with onnxruntime on each input batch; the largest |onnxruntime - seqlab| (refused above
    the tolerance)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = torch.get_num_threads()
    options.log_severity_level = 3  # errors only
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    worst = 0.0
    for feed in inputs:
        with torch.no_grad():
            ours = graph(**feed).float().numpy()
        theirs = session.run(None, {k: v.numpy() for k, v in feed.items()})[0]
        if theirs.shape != ours.shape:
            raise SeqlabError(f"onnxruntime gave shape {theirs.shape}, seqlab {ours.shape}: the ONNX export is wrong")
        diff = float(np.abs(theirs - ours).max())
        if not diff <= TOLERANCE * max(1.0, float(np.abs(ours).max())):
            raise SeqlabError(f"onnxruntime's outputs differ from seqlab's by {diff:.3g}; the ONNX export is wrong "
                              "(nothing written)")
        worst = max(worst, diff)
    return worst


def _ids(vocab: int, batch: int, seq: int, seed: int, low: int = 4) -> Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(min(low, vocab - 1), vocab, (batch, seq), generator=g)  # batch, seq


def _masked(vocab: int, lengths: list[int], seed: int, pad_id: int = 0) -> dict[str, Tensor]:
    """A padded batch: random ids, attention_mask 1 on each row's first ``length`` positions."""
    seq = max(lengths)
    ids = _ids(vocab, len(lengths), seq, seed)
    mask = (torch.arange(seq)[None, :] < torch.tensor(lengths)[:, None]).long()  # batch, seq
    return {"input_ids": ids.masked_fill(mask == 0, pad_id), "attention_mask": mask}


def _lengths(max_len: int | None) -> tuple[list[int], list[list[int]]]:
    """The example batch's lengths (at least 2 rows and 2 positions, so no axis is fixed at 1) and those of
    the check batches (``max_len`` None: no limit, 40 is checked)."""
    max_len = max_len or 40
    top = max(2, min(max_len, 12))
    return [top, top - 1 if top > 2 else top], [[max(1, top - 3)], [min(max_len, 7), 1, min(max_len, 5)],
                                                [max_len, max(1, max_len // 2)]]


def export_lm(model: nn.Module, path: Path, metadata: dict[str, str]) -> float:
    graph = LMGraph(model).float().eval()
    vocab, max_len = model.cfg.vocab_size, model.cfg.max_len
    example, checks = _lengths(max_len)
    _export(graph, {"input_ids": _ids(vocab, 2, example[0], 0)}, "logits", max_len, path, metadata)
    return _check(graph, path, [{"input_ids": _ids(vocab, len(c), max(c), i + 1)} for i, c in enumerate(checks)])


def _export_masked(graph: nn.Module, vocab: int, max_len: int, output: str, path: Path, metadata: dict[str, str],
                   pad_id: int = 0) -> float:
    example, checks = _lengths(max_len)
    _export(graph, _masked(vocab, example, 0, pad_id), output, max_len, path, metadata)
    return _check(graph, path, [_masked(vocab, c, i + 1, pad_id) for i, c in enumerate(checks)])


def _tokenizer_metadata(tokenizer) -> dict[str, str]:
    """A Hugging Face tokenizer.json for the file's metadata, or the word list of a word-level vocabulary."""
    from seqlab.models.pretrained_heads import SubwordTokenizer
    from seqlab.text.hf_tokenizer import to_hf_tokenizer
    from seqlab.text.tokenizers import Tokenizer
    from seqlab.text.vocab import Vocab

    if isinstance(tokenizer, SubwordTokenizer):
        raw = json.loads(tokenizer.json)
        raw["padding"] = raw["truncation"] = None
        return {"tokenizer": json.dumps(raw, ensure_ascii=False)}
    if isinstance(tokenizer, Tokenizer):
        return {"tokenizer": to_hf_tokenizer(tokenizer).to_str()}
    if isinstance(tokenizer, Vocab):
        return {"vocab": json.dumps(tokenizer.tokens, ensure_ascii=False)}
    return {}


def export_run(run, path: Path) -> tuple[str, float]:
    """The model of a loaded run (what :func:`seqlab.load` returns) as an ONNX file; returns a description
    and the largest difference onnxruntime showed."""
    from seqlab.models.pretrained_heads import SequenceClassifier, TokenClassifier

    kind = run.config.task.kind
    model = run.model
    meta = {"seqlab.model": f"{kind} {run.config.arch}", "seqlab.run": str(run.run_dir)}
    if kind == "lm":
        meta.update(_tokenizer_metadata(run.tokenizer))
        return "lm: input_ids -> logits", export_lm(model, path, meta)
    tokenizer = run.tokenizer  # a word Vocab, a Tokenizer or a SubwordTokenizer
    meta.update(_tokenizer_metadata(tokenizer), labels=json.dumps(run.labels.names, ensure_ascii=False))
    what = f"{kind}: input_ids, attention_mask -> logits"
    if isinstance(model, (TokenClassifier, SequenceClassifier)):
        enc = model.encoder.cfg
        return what, _export_masked(FineTunedGraph(model), enc.vocab_size, model.cfg.max_len, "logits", path, meta,
                                    enc.pad_id)
    vocab = tokenizer.vocab_size if hasattr(tokenizer, "vocab_size") else len(tokenizer)
    max_len = getattr(model.cfg, "max_len", None)  # recurrent encoders have no position limit
    return what, _export_masked(MaskedGraph(model), vocab, max_len, "logits", path, meta)


def export_sentence_encoder(name_or_dir, path: Path) -> tuple[str, float]:
    """A pretrained BERT-style encoder (directory or known name) as sentence embeddings."""
    from seqlab.models.pretrained import from_pretrained

    encoder, tokenizer = from_pretrained(name_or_dir)
    raw = json.loads(tokenizer.to_json())
    raw["padding"] = raw["truncation"] = None
    meta = {"seqlab.model": "sentence encoder", "tokenizer": json.dumps(raw, ensure_ascii=False),
            "max_length": str(tokenizer.max_length)}
    cfg = encoder.cfg
    diff = _export_masked(SentenceEmbeddingGraph(encoder), cfg.vocab_size, cfg.max_len, "sentence_embedding", path,
                          meta, cfg.pad_id)
    return "sentence encoder: input_ids, attention_mask -> sentence_embedding", diff
