"""Linear-chain conditional random field: an output layer that scores whole tag sequences (Lafferty et al. 2001;
over a BiLSTM tagger's per-token scores, Lample et al. 2016 "Neural Architectures for Named Entity Recognition",
section 2.2).

Equations (tags y = y_1 .. y_n of a sentence x of n tokens):
- e_t(y): emission score of tag y at token t (the tagger's logits); A[i, j]: score of tag j right after tag i;
  start[j], end[j]: scores of a sequence that starts / ends with tag j
- score(x, y) = start[y_1] + Σ_t e_t(y_t) + Σ_{t>1} A[y_{t-1}, y_t] + end[y_n]
- log Z(x) = logsumexp over every tag sequence y' of score(x, y'), by the forward algorithm in log space:
  α_1(j) = start[j] + e_1(j);  α_t(j) = logsumexp_i(α_{t-1}(i) + A[i, j]) + e_t(j);  log Z = logsumexp_j(α_n(j) + end[j])
- log p(y | x) = score(x, y) - log Z(x): the log-likelihood; the training loss is its negative
- Viterbi (max-product with back-pointers): δ_1(j) = start[j] + e_1(j);
  δ_t(j) = max_i(δ_{t-1}(i) + A[i, j]) + e_t(j), ψ_t(j) = argmax_i(δ_{t-1}(i) + A[i, j]);
  y_n = argmax_j(δ_n(j) + end[j]), y_{t-1} = ψ_t(y_t)

Constraints (:func:`transition_constraints`): boolean masks of the transitions, starts and ends a tagging scheme
allows (IOB2: "I-PER" only after "B-PER" or "I-PER", never first; BIOES adds the E-/S- rules and the ends). In
the likelihood a forbidden score is the constant FORBIDDEN = -1e4 rather than -inf: where every term of a
logsumexp is -inf (a state no allowed path reaches, e.g. I-X at t = 1) its gradient is NaN, while exp(-1e4)
is exactly 0 in float32 and float64, so forbidden paths still get probability 0. Viterbi uses -inf (it has no
gradient), so it never decodes a forbidden path. The masks are buffers of the state dict: a checkpoint carries
them, and loading it rebuilds the constraints the model was trained with.

Shapes: batch; seq (positions, padding after each sequence's real tokens); labels.
Masks: ``mask`` (batch, seq), True = real token, real tokens first (:mod:`seqlab.nn.masks`); every sequence
has at least one real token.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import Tensor, nn

from seqlab.base.errors import SeqlabError

FORBIDDEN = -1e4  # a forbidden transition's score in the likelihood (see the module docstring)
SCHEMES = {"IOB2": ("B", "I"), "BIOES": ("B", "I", "E", "S")}  # scheme -> the prefixes its labels may carry
PREFIXES = ("B", "I", "E", "S", "L", "U")  # the prefixes of the IOB-family schemes, BILOU's included


class Constraints(NamedTuple):
    """What a tagging scheme allows (True = allowed)."""

    allowed: Tensor  # labels, labels: tag j may follow tag i
    allowed_start: Tensor  # labels: a sequence may start with tag j
    allowed_end: Tensor  # labels: a sequence may end with tag j


def label_scheme(label_names: Sequence[str]) -> str:
    """"BIOES" when some label is an E- or S- tag, else "IOB2" (the schemes the tagging task reads)."""
    return "BIOES" if any(name[:2] in ("E-", "S-") for name in label_names) else "IOB2"


def _parse(name: str, scheme: str) -> tuple[str, str] | None:
    """(prefix, type) of a tagged label ("B-PER" -> ("B", "PER")); None for "O" and labels without a prefix
    (outside every entity: anything may follow or precede them)."""
    prefix, sep, kind = name.partition("-")
    if not sep or prefix not in PREFIXES:
        return None
    if prefix not in SCHEMES[scheme]:
        raise SeqlabError(f"label {name!r} is not a {scheme} tag (prefixes {', '.join(SCHEMES[scheme])}); "
                          "give the labels in IOB2 or BIOES")
    return prefix, kind


def transition_constraints(label_names: Sequence[str], scheme: str = "IOB2") -> Constraints:
    """The transitions, starts and ends that ``scheme`` ("IOB2" or "BIOES") allows among ``label_names``.

    IOB2: I-X only after B-X or I-X, and never first. BIOES: after B-X or I-X only I-X or E-X; I-X and E-X only
    after B-X or I-X; no sequence starts with I-X or E-X nor ends with B-X or I-X. "O" and labels without a
    prefix are outside every entity.
    """
    if scheme not in SCHEMES:
        raise SeqlabError(f"unknown tagging scheme {scheme!r}; use one of {', '.join(SCHEMES)}")
    tags = [_parse(name, scheme) for name in label_names]
    n = len(tags)
    allowed = torch.ones(n, n, dtype=torch.bool)  # labels, labels
    for i, before in enumerate(tags):
        for j, after in enumerate(tags):
            inside = before is not None and before[0] in ("B", "I")  # an entity goes on after tag i
            continues = after is not None and after[0] in ("I", "E")  # needs B-X or I-X of its type before it
            if continues:
                allowed[i, j] = inside and before[1] == after[1]
            elif scheme == "BIOES":
                allowed[i, j] = not inside  # B-X, I-X must go on with I-X or E-X
    start = torch.tensor([t is None or t[0] not in ("I", "E") for t in tags], dtype=torch.bool)  # labels
    end = torch.tensor([scheme == "IOB2" or t is None or t[0] not in ("B", "I") for t in tags],
                       dtype=torch.bool)  # labels
    return Constraints(allowed, start, end)


def gather_scored(scored: Tensor, *per_position: Tensor) -> tuple[Tensor, list[Tensor]]:
    """The scored positions of each row moved to its front, in order: scored (batch, seq) and tensors (batch,
    seq, ...) -> (mask (batch, words), the tensors (batch, words, ...)), words the most scored positions of a
    row (a sub-word tagger's first sub-words); a shorter row's tail holds other positions, masked out."""
    counts = scored.sum(dim=1)  # batch
    words = int(counts.max()) if len(counts) else 0
    order = torch.argsort((~scored).to(torch.int8), dim=1, stable=True)[:, :words]  # batch, words
    mask = torch.arange(words, device=scored.device) < counts.unsqueeze(1)  # batch, words
    gathered = []
    for x in per_position:
        index = order.view(*order.shape, *(1,) * (x.dim() - 2)).expand(-1, -1, *x.shape[2:])  # batch, words, ...
        gathered.append(x.gather(1, index))
    return mask, gathered


class CRF(nn.Module):
    """Transitions A (labels, labels), start and end scores (labels,), and optional :class:`Constraints`
    (None: everything allowed). The scores start at 0 (every sequence equally likely before the emissions)."""

    def __init__(self, n_labels: int, constraints: Constraints | None = None) -> None:
        super().__init__()
        self.n_labels = n_labels
        self.transitions = nn.Parameter(torch.zeros(n_labels, n_labels))  # A[i, j]: tag i -> tag j
        self.start = nn.Parameter(torch.zeros(n_labels))  # labels
        self.end = nn.Parameter(torch.zeros(n_labels))  # labels
        self.register_buffer("allowed", torch.ones(n_labels, n_labels, dtype=torch.bool))  # labels, labels
        self.register_buffer("allowed_start", torch.ones(n_labels, dtype=torch.bool))  # labels
        self.register_buffer("allowed_end", torch.ones(n_labels, dtype=torch.bool))  # labels
        if constraints is not None:
            self.constrain(constraints)

    def constrain(self, constraints: Constraints) -> None:
        """Set the allowed transitions, starts and ends (copied into the buffers, on their device)."""
        n = self.n_labels
        for buffer, mask, shape in zip((self.allowed, self.allowed_start, self.allowed_end), constraints,
                                       ((n, n), (n,), (n,))):
            if tuple(mask.shape) != shape:
                raise ValueError(f"constraint mask of shape {tuple(mask.shape)}, expected {shape} for {n} labels")
            buffer.copy_(mask)

    def scores(self, forbidden: float, dtype: torch.dtype) -> tuple[Tensor, Tensor, Tensor]:
        """(A (labels, labels), start (labels,), end (labels,)) in ``dtype``, ``forbidden`` where not allowed."""
        return (self.transitions.to(dtype).masked_fill(~self.allowed, forbidden),
                self.start.to(dtype).masked_fill(~self.allowed_start, forbidden),
                self.end.to(dtype).masked_fill(~self.allowed_end, forbidden))

    def _check(self, emissions: Tensor, mask: Tensor) -> Tensor:
        """Emissions in float32 at least, after checking the shapes and the mask."""
        if emissions.dim() != 3 or emissions.shape[-1] != self.n_labels or mask.shape != emissions.shape[:2]:
            raise ValueError(f"emissions {tuple(emissions.shape)} and mask {tuple(mask.shape)} must be (batch, seq, "
                             f"{self.n_labels}) and (batch, seq)")
        if emissions.shape[1] == 0 or not bool(mask[:, 0].all()):
            raise ValueError("every sequence needs a real first token (mask[:, 0] all True)")
        return emissions.to(torch.promote_types(emissions.dtype, torch.float32))

    def log_likelihood(self, emissions: Tensor, tags: Tensor, mask: Tensor) -> Tensor:
        r"""log p(tags | x) = score(x, tags) - log Z(x): emissions (batch, seq, labels), tags (batch, seq), mask
        (batch, seq) -> (batch,).

        !!! equation "Sequence labelling › Linear-chain CRF (beyond the notes)"
            $\log p(y \mid x) = \mathrm{score}(x, y) - \log Z(x)$: the log-likelihood of a whole tag sequence;
            the tagger's training loss is its negative, summed over sentences."""
        e = self._check(emissions, mask)
        return self.score(e, tags, mask) - self.log_partition(e, mask)

    def score(self, emissions: Tensor, tags: Tensor, mask: Tensor) -> Tensor:
        r"""score(x, y) = start[y_1] + Σ_t e_t(y_t) + Σ_{t>1} A[y_{t-1}, y_t] + end[y_n] over the real tokens ->
        (batch,).

        !!! equation "Sequence labelling › Linear-chain CRF (beyond the notes)"
            $\mathrm{score}(x, y) = \mathrm{start}_{y_1} + \sum_{t=1}^n e_t(y_t) + \sum_{t=2}^n A_{y_{t-1}, y_t}
            + \mathrm{end}_{y_n}$: a tag sequence's score, the emission scores $e_t$ (the tagger's logits) plus
            the transition scores $A$ between consecutive tags."""
        a, start, end = self.scores(FORBIDDEN, emissions.dtype)
        real = mask.to(emissions.dtype)  # batch, seq
        emitted = emissions.gather(2, tags.unsqueeze(-1)).squeeze(-1) * real  # batch, seq
        moved = a[tags[:, :-1], tags[:, 1:]] * real[:, 1:]  # batch, seq-1
        last = tags.gather(1, (mask.sum(dim=1, keepdim=True) - 1)).squeeze(1)  # batch: y_n
        return start[tags[:, 0]] + emitted.sum(dim=1) + moved.sum(dim=1) + end[last]

    def log_partition(self, emissions: Tensor, mask: Tensor) -> Tensor:
        r"""log Z(x) by the forward algorithm: emissions (batch, seq, labels), mask (batch, seq) -> (batch,).

        !!! equation "Sequence labelling › Linear-chain CRF (beyond the notes)"
            $\alpha_t(j) = \log\sum_i \exp(\alpha_{t-1}(i) + A_{ij}) + e_t(j),\ \log Z = \log\sum_j
            \exp(\alpha_n(j) + \mathrm{end}_j)$: the forward algorithm, the log-sum over every tag sequence in
            $O(n L^2)$, from $\alpha_1(j) = \mathrm{start}_j + e_1(j)$."""
        a, start, end = self.scores(FORBIDDEN, emissions.dtype)
        alpha = start + emissions[:, 0]  # batch, labels
        for t in range(1, emissions.shape[1]):
            step = torch.logsumexp(alpha.unsqueeze(2) + a, dim=1) + emissions[:, t]  # batch, labels (over i)
            alpha = torch.where(mask[:, t].unsqueeze(1), step, alpha)  # padding keeps α_n
        return torch.logsumexp(alpha + end, dim=1)  # batch

    @torch.no_grad()
    def decode(self, emissions: Tensor, mask: Tensor) -> list[list[int]]:
        r"""Viterbi: the best tag sequence of each row, as long as its real tokens: emissions (batch, seq, labels),
        mask (batch, seq) -> one list of tag ids per row.

        !!! equation "Sequence labelling › Linear-chain CRF (beyond the notes)"
            $\delta_t(j) = \max_i(\delta_{t-1}(i) + A_{ij}) + e_t(j),\ \psi_t(j) = \arg\max_i(\delta_{t-1}(i) +
            A_{ij})$: Viterbi, the forward recursion with max for the sum, keeping back-pointers $\psi$.

        !!! equation "Sequence labelling › Linear-chain CRF (beyond the notes)"
            $y_n = \arg\max_j(\delta_n(j) + \mathrm{end}_j),\ y_{t-1} = \psi_t(y_t)$: the best sequence, read back
            from the last tag through the back-pointers."""
        e = self._check(emissions, mask)
        a, start, end = self.scores(float("-inf"), e.dtype)
        delta = start + e[:, 0]  # batch, labels
        back = []  # ψ_t, t = 2..n: batch, labels
        for t in range(1, e.shape[1]):
            best, psi = (delta.unsqueeze(2) + a).max(dim=1)  # batch, labels (over i)
            back.append(psi)
            delta = torch.where(mask[:, t].unsqueeze(1), best + e[:, t], delta)  # padding keeps δ_n
        y = (delta + end).argmax(dim=1)  # batch: y_n
        path = [y]
        for t in range(e.shape[1] - 1, 0, -1):  # y_{t-1} = ψ_t(y_t); padding keeps y_n
            y = torch.where(mask[:, t], back[t - 1].gather(1, y.unsqueeze(1)).squeeze(1), y)
            path.append(y)
        paths = torch.stack(path[::-1], dim=1).cpu()  # batch, seq
        return [row[:n].tolist() for row, n in zip(paths, mask.sum(dim=1).tolist())]
