"""``seqlab export``: a trained run in the formats other tools load.

==================  =================================================  ==========================================
run                 ``--format hf`` (a directory, with tokenizer.json)  ``--format onnx`` (one file)
==================  =================================================  ==========================================
lm                  ``GPT2LMHeadModel`` (GPT-2-compatible runs)         ``input_ids`` -> ``logits``
tag (pretrained)    ``BertForTokenClassification``                      ``input_ids, attention_mask`` -> ``logits``
classify (pretr.)   ``BertForSequenceClassification`` (pooling=cls)     ``input_ids, attention_mask`` -> ``logits``
tag/classify (tr.)                                                      ``input_ids, attention_mask`` -> ``logits``
BERT-style encoder  (is one already)                                    ``... -> sentence_embedding``
embed               ``--format word2vec`` (text) or ``word2vec-binary`` (gensim's ``binary=True``)
==================  =================================================  ==========================================

The Hugging Face directories are written with safetensors and JSON only (transformers is not needed to
write them); ``--format onnx`` needs the ``export`` extra (onnx, onnxscript, onnxruntime), and checks the
file with onnxruntime against seqlab's own outputs before it is put in place.

Every export is built in a temporary sibling of ``--out`` and renamed into place at the end, so an error
leaves nothing behind; an existing ``--out`` is replaced only with ``force``, and only when it is a seqlab
output (an export, a run, a prepared corpus: :func:`seqlab.base.outputs.check_replaceable`; a user's file or a
folder of anything else is refused, untouched). The run's best checkpoint is
used by default, its final one with ``last``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from seqlab.base.errors import SeqlabError, given, spelled
from seqlab.base.io import remove, replace_atomic
from seqlab.base.outputs import check_replaceable

FORMATS = ("hf", "onnx", "word2vec", "word2vec-binary")
EXTRA = "pip install 'seqlab[export]'"
ONNX_MODULES = ("onnx", "onnxscript", "onnxruntime")
# what each task offers (checked before anything is loaded)
TASK_FORMATS = {"lm": ("hf", "onnx"), "tag": ("hf", "onnx"), "classify": ("hf", "onnx"),
                "embed": ("word2vec", "word2vec-binary"), "translate": (), "forecast": ()}
RECURRENT = ("lstm", "gru", "rnn")


def export(run: str | os.PathLike, format: str, out: str | os.PathLike, *, force: bool = False,
           last: bool = False) -> dict:
    """Export ``run`` (a run directory; for ``onnx`` also a pretrained encoder directory or name) to ``out``.

    Returns what was written: ``{"format", "out", "model"}``, for a run the checkpoint used (``checkpoint``:
    best or last, and its ``step``) and, for ONNX, the largest difference between onnxruntime's outputs and
    seqlab's (``max_abs_diff``).
    """
    if format not in FORMATS:
        raise SeqlabError(f"unknown export format {format!r}; use one of {', '.join(FORMATS)}")
    out = Path(out)
    run_path = Path(run)
    is_run = (run_path / "config.toml").is_file()
    if is_run:
        from seqlab.api import read_run_config

        cfg = read_run_config(run_path)
        _check_task(cfg, format, run_path)
    else:
        _check_encoder(run, format)
    if format == "onnx":
        _require(ONNX_MODULES, "--format onnx")
    if os.path.lexists(out) and not force:
        raise SeqlabError(f"{given('out', out)} already exists; replace it with {spelled('force')} or choose "
                          "another path")
    if force:
        check_replaceable(out)  # before any work: what force would replace is seqlab's
    if not is_run:
        from seqlab.exporters import onnx

        with staged(out, force) as tmp:
            model, diff = onnx.export_sentence_encoder(run, tmp)
        return {"format": format, "out": str(out), "model": model, "max_abs_diff": diff}
    obj = _load(run_path, last)
    report = {"format": format, "out": str(out), "checkpoint": "last" if last else "best",
              "step": obj.checkpoint.get("step")}
    if format in ("word2vec", "word2vec-binary"):
        with staged(out, force) as tmp:
            obj.vectors.save_word2vec_format(tmp, binary=format == "word2vec-binary")
        return {**report, "model": "word2vec"}
    if format == "hf":
        from seqlab.exporters import hf

        with staged(out, force, directory=True) as tmp:
            model = hf.export_lm(obj, tmp) if cfg.task.kind == "lm" else hf.export_bert(obj, tmp)
        return {**report, "model": model}
    from seqlab.exporters import onnx

    with staged(out, force) as tmp:
        model, diff = onnx.export_run(obj, tmp)
    return {**report, "model": model, "max_abs_diff": diff}


def _check_task(cfg, format: str, run: Path) -> None:
    """Refuse, before loading anything, a format the run's task (or architecture) has no export to."""
    kind = cfg.task.kind
    offered = TASK_FORMATS.get(kind, ())
    if format not in offered:
        if not offered:
            raise SeqlabError(f"{run} (task.kind={kind}) has no export; exports exist for lm (hf, onnx), "
                              "tag and classify (hf, onnx) and embed (word2vec, word2vec-binary) runs")
        raise SeqlabError(f"{run} (task.kind={kind}) has no --format {format} export; use --format "
                          f"{' or '.join(offered)}")
    if kind == "tag" and getattr(cfg.model, "char_dim", 0):  # the graphs take word ids only
        raise SeqlabError(f"{run} has model.char_dim = {cfg.model.char_dim}: its character features read each "
                          "word's characters, which the ONNX/HF inputs (input_ids, attention_mask) do not carry; "
                          "export a tagger trained with model.char_dim=0")
    if kind == "tag" and getattr(cfg.model, "crf", False):  # the graph would stop at the emission scores
        raise SeqlabError(f"{run} has model.crf = true: the CRF's Viterbi decoding has no ONNX/HF equivalent; "
                          "export a tagger trained with model.crf=false")
    if getattr(cfg.data, "digits_to_zero", False):  # the exported tokenizer would read "1996" as itself
        raise SeqlabError(f"{run} has data.digits_to_zero = true: it reads every digit as 0, which the exported "
                          "tokenizer cannot; export a run trained with data.digits_to_zero=false")
    if getattr(cfg.model, "vectors_vocab", 0) and not getattr(cfg.data, "lowercase", True):
        raise SeqlabError(f"{run} has model.vectors_vocab = {cfg.model.vectors_vocab} with data.lowercase = false: "
                          "its vocabulary looks an unknown word up lowercased, which the exported tokenizer "
                          "cannot; export a run trained with model.vectors_vocab=0 or data.lowercase=true")
    if format == "onnx" and kind in ("tag", "classify") and cfg.arch in RECURRENT:
        raise SeqlabError(f"{run} (model.arch={cfg.arch}) has no ONNX export: its padding is read by a data-"
                          "dependent length check a graph cannot hold; transformer and pretrained taggers and "
                          "classifiers export")
    if format != "hf":
        return
    if kind == "lm" and cfg.arch != "pretrained":  # a run started from a GPT-2 directory is one
        from seqlab.models.gpt2_convert import gpt2_incompatibilities

        bad = gpt2_incompatibilities(cfg.model, cfg.arch)
        if bad:
            raise SeqlabError(f"{run} is not GPT-2-compatible, so it has no --format hf export: {', '.join(bad)}; "
                              "--format onnx exports any language model")
    elif cfg.arch != "pretrained":
        raise SeqlabError(f"{run} (model.arch={cfg.arch}) has no Hugging Face form: only taggers and classifiers "
                          "fine-tuned from a BERT-style encoder (model.arch=pretrained) have one; use --format onnx")
    elif kind == "classify" and getattr(cfg.model, "pooling", "mean") != "cls":
        raise SeqlabError(f"{run} has model.pooling={cfg.model.pooling} (BertForSequenceClassification: cls, "
                          "the pooler's tanh layer on [CLS]); retrain with --set model.pooling=cls for a Hugging "
                          "Face export, or use --format onnx")


def _check_encoder(name_or_dir, format: str) -> None:
    """Not a run: a pretrained encoder directory or name, which exports to ONNX (sentence embeddings)."""
    from seqlab.models.pretrained import resolve_pretrained

    path = Path(name_or_dir)
    if path.is_dir() and not (path / "config.json").is_file():
        raise SeqlabError(f"{path} is neither a run directory (no config.toml) nor a pretrained encoder "
                          "(no config.json); give the folder `seqlab train` wrote")
    if not path.is_dir() and not path.exists() and str(name_or_dir) not in _known_models():
        raise SeqlabError(f"run directory {path} not found; give a run directory `seqlab train` wrote (or, "
                          "for --format onnx, a BERT-style encoder directory)")
    resolve_pretrained(name_or_dir)  # a file, or a known model that is not installed: its own message
    if format != "onnx":
        raise SeqlabError(f"{name_or_dir} is a pretrained encoder, not a run; it exports with --format onnx "
                          "(sentence embeddings)" + (" and is a Hugging Face directory already" if format == "hf"
                                                     else ""))


def _known_models() -> tuple[str, ...]:
    from seqlab.models.pretrained import KNOWN_MODELS

    return tuple(KNOWN_MODELS)


def _require(modules: tuple[str, ...], what: str) -> None:
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise SeqlabError(f"{what} needs the export extra ({', '.join(missing)} not installed): {EXTRA}")


def _load(run: Path, last: bool):
    """The run's trained object on the CPU: its best checkpoint, or its final one with ``last``."""
    from seqlab import api

    return api.load(run, device="cpu", last=last)


@contextlib.contextmanager
def staged(out: Path, force: bool, directory: bool = False) -> Iterator[Path]:
    """A temporary sibling of ``out`` (an empty directory, or a file path with ``out``'s suffix) to write
    into; when the block ends without an error it is renamed onto ``out`` (an existing ``out`` is replaced
    only with ``force``, and only when it is a seqlab output), else removed, with any parent folders this call
    created."""
    created = [p for p in [out.parent, *out.parent.parents] if not p.exists()]
    out.parent.mkdir(parents=True, exist_ok=True)
    if directory:
        tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp"))
    else:
        tmp = out.parent / f".{out.stem}.{os.getpid()}.tmp{out.suffix}"
    old = out.parent / f".{out.name}.{os.getpid()}.old"
    try:
        yield tmp
        if os.path.lexists(out) and not force:
            raise SeqlabError(f"{given('out', out)} appeared while exporting; replace it with {spelled('force')}")
        check_replaceable(out)  # what appeared meanwhile is checked too
        replace_atomic(tmp, out, aside=old)  # the previous export is put back if the rename fails
    except BaseException:
        remove(tmp)
        for p in created:  # deepest first
            with contextlib.suppress(OSError):
                p.rmdir()
        raise
