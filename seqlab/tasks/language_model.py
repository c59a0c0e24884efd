"""A trained language model, loaded from a run directory (:func:`seqlab.tasks.lm.load`, what ``seqlab.load``
returns for an lm run): ``generate`` for ``seqlab generate`` and serve, ``evaluate`` for ``seqlab eval``,
``attention`` for ``seqlab attention``.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from seqlab.config import RunConfig
from seqlab.data.lm_tokens import SPLITS, load_splits
from seqlab.decode import Sampling, forget_compiled, generate
from seqlab.devices import decode_products
from seqlab.errors import SeqlabError
from seqlab.metrics.lm import perplexity, score_stream
from seqlab.nn.weight_only import to_weight_only
from seqlab.text.tokenizers import Tokenizer


class LanguageModel:
    """A trained LM loaded from a run directory: ``generate``, ``evaluate``, ``attention``."""

    def __init__(self, run_dir: Path, cfg: RunConfig, tokenizer: Tokenizer, model: nn.Module,
                 device: torch.device):
        self.run_dir, self.config, self.tokenizer, self.model, self.device = run_dir, cfg, tokenizer, model, device

    def generate(self, prompt: str | list[str], max_new_tokens: int = 200, temperature: float = 1.0,
                 top_k: int = 0, top_p: float = 1.0, seed: int | None = None, use_cache: bool = True,
                 compile: bool = False):
        """The continuation of each prompt (text); a str for a str prompt, a list for a list. ``compile``: the
        decode step through torch.compile, its products chosen for this machine (seqlab.devices.decode_products)."""
        prompts = [prompt] if isinstance(prompt, str) else list(prompt)
        ids = [self.tokenizer.encode(p) for p in prompts]
        products = decode_products(self.device) if compile else "blas"
        new = generate(self.model, ids, max_new_tokens, Sampling(temperature, top_k, top_p), seed=seed,
                       eos_id=self.tokenizer.eos_id, use_cache=use_cache, device=self.device, compile=compile,
                       products=products)
        texts = [self.tokenizer.decode(t) for t in new]
        return texts[0] if isinstance(prompt, str) else texts

    def use_weight_dtype(self, dtype: str) -> int:
        """Store the model's linear-layer weights in ``dtype`` ("fp32", "bf16" or "int8"; seqlab.nn.weight_only)
        from now on, for generation (fast with ``compile=True``) and evaluation; returns the layers converted.
        Irreversible on this object: load the run again for fp32."""
        converted = to_weight_only(self.model, dtype)
        if converted:
            forget_compiled(self.model)  # a step compiled before holds the fp32 layers (and froze them)
        return converted

    def evaluate(self, split: str = "test", batch_size: int = 16) -> dict[str, float]:
        if split not in SPLITS:
            raise SeqlabError(f"unknown split {split!r}; valid splits: {', '.join(SPLITS)}")
        tokens = load_splits(self.run_dir)[split]
        if len(tokens) < 2:
            raise SeqlabError(f"the {split} split of {self.run_dir} has {len(tokens)} tokens, nothing to score; "
                              "choose another --split or train with a non-zero fraction for it in data.split")
        total, count = score_stream(self.model, tokens, self.model.cfg.max_len, batch_size, self.device)
        return {"loss": total / count, "perplexity": perplexity(total, count), "tokens": count}

    def attention(self, text: str) -> tuple[list[str], list[torch.Tensor]]:
        """Token strings and per-layer attention weights (head, seq, seq) for ``text``."""
        if not hasattr(self.model, "attention_maps"):
            raise SeqlabError(f"{self.run_dir} is a {self.config.arch} language model, which has no attention weights; "
                              "attention maps need a Transformer run")
        ids = self.tokenizer.encode(text)[-self.model.cfg.max_len:]
        if not ids:
            raise SeqlabError("--text is empty after tokenisation; give some text")
        with torch.no_grad():
            weights = self.model.attention_maps(torch.tensor([ids], device=self.device))
        tokens = [self.tokenizer.decode([i]) for i in ids]
        return tokens, [w[0].float().cpu() for w in weights]
