"""The logic of bench/generate.py's issue-#55 tables and bench/serve.py's concurrent streams, without running a
bench: the bound for a batch size (which term limits, the tokens/s it allows), the fp32 token check that fails the
bench, and the concurrent streams' near-tie rule."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
_PATH = sys.path[:]  # put back after the imports: a bench script puts bench/ first, where bench/onnx.py would
sys.path.append(str(BENCH))  # shadow the onnx package for every later test of this worker

import generate_peers as peers  # noqa: E402
from serve import check_stream  # noqa: E402

sys.path[:] = _PATH

SHAPE = peers.Shape(weight_bytes=40_000_000, product_params=10_000_000, layers=6, d_model=384)


def test_batch_one_is_bound_by_the_weights_when_the_gemm_rate_is_high():
    b = peers.batch_bound(SHAPE, [16], 256, bandwidth=20e9, flop_rate=1e15)
    assert b["limiter"] == "weights"
    assert b["tokens_per_s"] == pytest.approx(256 / (256 * 40e6 / 20e9))  # one weight read a token


def test_many_rows_become_bound_by_their_flops():
    b = peers.batch_bound(SHAPE, [16] * 16, 256, bandwidth=20e9, flop_rate=100e9)
    # a step of 16 rows: 2 x 16 x 1e7 FLOPs = 3.2 ms at 100 GFLOP/s, against 2 ms for the weights
    assert b["limiter"] == "FLOPs"
    assert b["tokens_per_s"] < 16 / 2e-3


def test_the_kv_cache_term_grows_with_the_context_and_can_limit():
    tiny = peers.Shape(weight_bytes=1_000, product_params=1_000, layers=6, d_model=384)
    b = peers.batch_bound(tiny, [200] * 16, 64, bandwidth=20e9, flop_rate=1e15)
    assert b["limiter"] == "KV cache"
    step = peers.kv_bytes(tiny, 16 * 201) / 20e9  # the first decode step: every row attends 201 positions
    assert b["terms_s"]["KV cache"] > 63 * step


def test_the_bound_never_exceeds_each_term_alone():
    lengths = [16, 3, 11, 7]
    b = peers.batch_bound(SHAPE, lengths, 64, bandwidth=25e9, flop_rate=200e9)
    for term in b["terms_s"].values():
        assert b["seconds"] >= term - 1e-12


def test_footprint_counts_the_weights_and_every_rows_whole_cache():
    assert peers.footprint(SHAPE, [10, 20], 5) == 40_000_000 + peers.kv_bytes(SHAPE, 15) + peers.kv_bytes(SHAPE, 25)


def test_an_fp32_row_with_other_tokens_fails_the_bench():
    outputs = {"hf": [1, 2, 3], "seqlab": [1, 2, 3], "peer": [1, 9, 3]}
    peers.require_same(outputs, [1, 2, 3], ["hf", "seqlab"], "batch 1")  # passes
    with pytest.raises(peers.BenchCheckFailed, match=r"peer: rows differ at \[1\]"):
        peers.require_same(outputs, [1, 2, 3], ["hf", "seqlab", "peer"], "batch 1")


def test_a_batched_row_is_checked_row_by_row():
    outputs = {"b": [[1, 2], [3, 4]]}
    with pytest.raises(peers.BenchCheckFailed, match=r"\[None, 0\]"):
        peers.require_same(outputs, [[1, 2], [5, 4]], ["b"], "batch 2")


def test_a_short_row_fails_the_length_check():
    with pytest.raises(peers.BenchCheckFailed):
        peers.require_lengths({"one": [1, 2], "many": [[1, 2], [1]]}, 2, {"many"})
    peers.require_lengths({"one": [1, 2], "many": [[1, 2], [3, 4]]}, 2, {"many"})


def test_first_difference():
    assert peers.first_difference([1, 2], [1, 2]) is None
    assert peers.first_difference([1, 2], [1, 3]) == 1
    assert peers.first_difference([1, 2], [1, 2, 3]) == 2


def test_a_stream_may_leave_its_solo_run_only_at_a_flagged_near_tie():
    solo = [5, 6, 7, 8]
    assert check_stream([5, 6, 7, 8], [False] * 4, solo) == (True, None)
    assert check_stream([5, 6, 9, 1], [False, False, True, False], solo) == (True, 2)  # diverged at a near tie
    assert check_stream([5, 6, 9, 8], [False, True, False, False], solo) == (False, 2)  # the tie was elsewhere
    assert check_stream([5, 6, 7], [False] * 3, solo) == (False, 3)  # cut short


def test_ctranslate2_rows_name_their_search_and_type():
    saved = sys.path[:]
    sys.path.append(str(BENCH))
    try:
        import generate
    finally:
        sys.path[:] = saved  # generate.py puts bench/ first: bench/onnx.py would shadow the onnx package

    rows = generate.ct2_rows({"float32": object(), "int8": object()}, [[1, 2]], "8 prompts, ", beam=5)
    assert set(rows) == {"ctranslate2: generate_batch, 8 prompts, float32 (fp32), beam 5, end_token=[]",
                         "ctranslate2: generate_batch, 8 prompts, int8 (int8 weights), beam 5, end_token=[]"}


def test_the_low_precision_bold_line_names_what_each_side_computes():
    saved = sys.path[:]
    sys.path.append(str(BENCH))
    try:
        import generate
    finally:
        sys.path[:] = saved

    ours_bf16, ours_int8 = "seqlab: bf16 weights", "seqlab: int8 weights"
    hf_bf16, torchao = "hf: bf16 model", "hf: torchao int8 weights"
    info = {ours_bf16: ("bf16", 1, generate.WEIGHT_ONLY.format("bf16")), hf_bf16: ("bf16", 2, generate.HF_BF16),
            ours_int8: ("int8", 1, generate.WEIGHT_ONLY.format("int8")), torchao: ("int8", None, generate.TORCHAO_INT8)}
    rate = {ours_bf16: 900.0, hf_bf16: 200.0, ours_int8: 500.0, torchao: 250.0}
    verdicts = generate.low_verdicts(rate, info, rate, None)
    bf16 = generate.low_bold_line("bf16", verdicts["bf16"])
    assert "seqlab best (bf16 weights, fp32 activations) / peer best (bf16 weights and bf16 activations" in bf16
    assert "= 4.50**" in bf16 and "not like with like" in bf16
    int8 = generate.low_bold_line("int8", verdicts["int8"])
    assert "= 2.00**" in int8 and "; like with like)" in int8


def test_the_step_profile_files_each_record_under_its_part():
    """Inductor's kernel names say what they fuse: a product through the C++ GEMM template, the attention (its
    softmax), anything else; a BLAS call counts as a product only inside the compiled graph (outside it, it is the
    prompt's eager encoding, left to "outside"); the graph's call and dynamo's records are parts of their own."""
    gemm = "graph_0_gemm_m8n1536k384_cpp_fused_add_addmm_gelu_native_layer_norm_view_5"
    attention = "graph_0_cpp_fused__softmax_add_addmm_arange_bitwise_not_bmm_index_copy_view_8"
    norm = "graph_0_cpp_fused_add_addmm_native_layer_norm_transpose_view_4"
    assert [peers.profile_part(n, True) for n in (gemm, attention, norm, "aten::addmm")] == list(peers.PARTS[:3]) + [
        peers.PARTS[0]]
    assert peers.profile_part("aten::addmm", False) is None
    assert peers.profile_part("## Call CompiledFxGraph None ##", False) == peers.PARTS[3]
    assert peers.profile_part("TorchDynamo Cache Lookup", False) == peers.PARTS[4]
    assert peers.profile_part("Torch-Compiled Region: 0/0", False) == peers.PARTS[4]


def test_the_profile_text_bounds_the_step_by_its_weights_and_cache_read_together():
    """What bounds the step: the weights and the mean KV bytes a step reads, both at the bandwidth (here 40 MB of
    weights; one row, a one-token prompt and 4 new tokens: steps 1 .. 3 attend 2, 3 and 4 positions)."""
    ms = dict.fromkeys(peers.PARTS, 1.0)
    text = peers.profile_text({"ms_a_step": ms, "wall_s": 1, "steps": 3}, 1, "tiled", SHAPE, [1], 4, 40e9, "DRAM",
                              5.0)
    kv = peers.kv_bytes(SHAPE, 3)  # steps 1 .. 3 attend 2, 3, 4 positions: 3 on average
    memory_ms = (40_000_000 + kv) / 40e9 * 1e3
    assert f"{memory_ms:.2f} ms a step" in text and f"at most {1e3 / memory_ms:.0f} tokens/s" in text
    assert "| weight products | 1.00 | 17% |" in text
