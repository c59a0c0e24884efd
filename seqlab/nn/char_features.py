"""Character-level word features (Lample et al. 2016, "Neural Architectures for Named Entity Recognition",
section 4.1): a bidirectional LSTM reads each word's characters, and its two final states are the word's feature,
concatenated to the word embedding before the word-level encoder. Words never seen in training still get a
feature from their spelling (capitals, suffixes, digits), which is what NER needs most.

Equations, for a word of m characters c_1 .. c_m:
    e_j = C · c_j                       the character's row of the character embedding C (n_chars, char_dim)
    →h_j = LSTM→(e_j, →h_{j-1})         left to right, j = 1 .. m; →h_0 = 0
    ←h_j = LSTM←(e_j, ←h_{j+1})         right to left, j = m .. 1; ←h_{m+1} = 0
    char_features(word) = [→h_m ; ←h_1] the forward state after the last character and the backward state
                                        after the first: 2 * char_hidden_size wide
and the word-level encoder reads x'_t = [E · I_t ; char_features(word_t)] (the concatenation is done by the
model, :mod:`seqlab.models.token_encoder`).

Batched over (batch, words, chars): the character ids are padded with 0 (<pad>) after each word's last
character, and whole padding words (positions after a sentence's end) are all 0, length 0. Only the words of
length >= 1 go through the LSTM, packed (``pack_padded_sequence``), so the LSTM stops at each word's own last
character and a word's feature never depends on the padding around it; the features of length-0 words are 0.

Shapes: batch; words (word positions, padded); chars (characters per word, padded); n (real words of the
batch); char_dim; hidden (char_hidden_size).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence

PAD_ID = 0  # <pad> in the character vocabulary (seqlab.text.vocab.Vocab.pad_id)


class CharBiLSTM(nn.Module):
    r"""Each word's characters -> [→h_m ; ←h_1] (module docstring): ``n_chars`` characters embedded in
    ``char_dim`` dimensions, a one-layer bidirectional LSTM of ``char_hidden_size`` per direction.

    !!! equation "Sequence labelling › Character features (beyond the notes)"
        $x'_t = [E\, I_t ; \overrightarrow{h}_m ; \overleftarrow{h}_1]$: a word's embedding with the final states
        of a bidirectional LSTM over its $m$ characters (Lample et al. 2016), so unseen words get a feature
        from their spelling."""

    def __init__(self, n_chars: int, char_dim: int, char_hidden_size: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(n_chars, char_dim, padding_idx=PAD_ID)  # C: n_chars, char_dim
        self.lstm = nn.LSTM(char_dim, char_hidden_size, batch_first=True, bidirectional=True)
        self.out_size = 2 * char_hidden_size  # width of a word's feature
        nn.init.uniform_(self.embed.weight, -0.1, 0.1)  # as the word embeddings (RecurrentEncoder)
        with torch.no_grad():
            self.embed.weight[PAD_ID].zero_()

    def forward(self, chars: Tensor) -> Tensor:
        """chars (batch, words, chars) character ids, 0 = padding after each word's characters (a padding word
        is all 0) -> features (batch, words, 2*hidden): [→h_m ; ←h_1] of each word, 0 for length-0 words."""
        batch, words, width = chars.shape
        flat = chars.reshape(batch * words, width)  # batch*words, chars
        lengths = (flat != PAD_ID).sum(dim=1)  # batch*words: characters in each word
        real = lengths > 0  # batch*words: not a padding word
        out = self.embed.weight.new_zeros(batch * words, self.out_size)  # batch*words, 2*hidden
        if bool(real.any()):
            e = self.embed(flat[real])  # n, chars, char_dim
            packed = pack_padded_sequence(e, lengths[real].cpu(), batch_first=True, enforce_sorted=False)
            _, (h_n, _) = self.lstm(packed)  # h_n: 2, n, hidden; [0] = →h_m, [1] = ←h_1 (each word's own m)
            out[real] = torch.cat([h_n[0], h_n[1]], dim=-1)  # n, 2*hidden
        return out.view(batch, words, self.out_size)  # batch, words, 2*hidden
