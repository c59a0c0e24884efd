"""Matrix products of a few rows, compiled as streaming reductions: the torch.compile backend of decoding.

A decode step multiplies one row per sequence by every weight matrix, y = x·W^T + b with x (rows, in) and
W (out, in), and attends one query over the cache, s = q·K^T and o = w·V. At batch 1 that is memory-bound:
each token reads every weight once (42 MB in fp32 for the 6-layer, 384-dim bench model). Inductor hands these
products to the BLAS (MKL's sgemv/sgemm, or oneDNN's packed linear with ``freezing``); on an AMD EPYC with
AVX-512 they read the weights at 5-10 GB/s, a third of what the memory delivers (bench/RESULTS.md, generate).
Written as the reduction y[r, n] = sum_k x[r, k]·W[n, k] + b[n], inductor emits one vectorised loop that
streams each row of W once (24-26 GB/s there, the memory's read bandwidth) with the bias and the following
elementwise ops fused in.

``backend`` is a torch.compile backend: inductor, with these decompositions for products of at most
``ROWS`` rows (larger ones, e.g. a prompt, still go to the BLAS); with ``few_rows=False`` only the attention's
one-query products, the weights' left to inductor's C++ GEMM template (products "tiled"). Whether decoding uses it
is not decided here: the caller passes ``products="blas"``, ``"stream"`` or ``"tiled"`` to
:func:`seqlab.decoding.decode.generate` (:func:`seqlab.decoding.products.decode_products` chooses, by measuring
this CPU once per row count). Only the summation order differs from the BLAS (fp32 sums of the same products,
about 1e-7 relative).

Shapes: rows (batch x tokens of the step); in, out (a weight's input and output widths); batch; keys.
"""

from __future__ import annotations

import functools

import torch


# A product with at most this many rows (per batch entry of a bmm) is a streaming reduction: batch-1 decoding,
# a bmm's one query per head at any batch, and up to 16 sequences decoded together. At more rows the BLAS takes over.
ROWS = 16
# The reduction is cut into chunks of this many inputs when several rows share the product (see _rows_product).
CHUNK = 16

_aten = torch.ops.aten


def _few(rows) -> bool:
    return isinstance(rows, int) and rows <= ROWS  # static shapes only: a symbolic size keeps the BLAS


def _computed(a):
    """``a`` as a buffer of its own: without this inductor inlines a's producer (a layer norm, GELU, the
    softmax) into the product's loop and recomputes it for every output, e.g. GELU's erf 384 times per hidden
    unit in the FFN's second product (the compiled batch-1 step ran at half the speed it does with it)."""
    from torch._inductor import inductor_prims  # noqa: F401  (registers prims.inductor_force_stride_order)

    return torch.ops.prims.inductor_force_stride_order(a, a.stride())


@functools.cache
def lanes() -> int:
    """fp32 lanes of the vector ISA inductor compiles for on this CPU (8 with AVX2, 16 with AVX-512; 1 without)."""
    from torch._inductor import cpu_vec_isa

    isa = cpu_vec_isa.pick_vec_isa()
    return isa.nelements(torch.float) if isa else 1


def _row_loops(a, b):
    """a (rows, in) @ b (in, out) -> (rows, out): one vectorised loop over in per output and row, so each row
    streams the weights once (one row: every weight read once)."""
    return (_computed(a)[:, :, None] * b[None]).sum(1)  # rows, in, out -> rows, out


def _rows_product(a, b):
    """a (rows, in) @ b (in, out) -> (rows, out) for a few rows, each weight read once for all of them.

    Written as out x rows with the rows innermost, inductor's loop is: for each output n, acc[rows] +=
    W[n, k] (broadcast) x a^T[k, rows] over k, the rows one vector (padded to the ISA's lanes with zero rows,
    dropped after). One accumulator per loop waits on the previous FMA's latency, so the sum over ``in`` is cut
    into chunks of CHUNK inputs, each chunk its own short loop whose FMAs the CPU overlaps with the next chunk's,
    and the chunks' partial sums are added after (AMD EPYC, AVX2, 2 cores, the bench model's FFN at 8 rows:
    2.5 ms against 4.3 for one loop per row and 4.6 for the BLAS)."""
    rows, width = a.shape
    padded = -(-rows // lanes()) * lanes()
    x = torch.nn.functional.pad(a, (0, 0, 0, padded - rows)) if padded != rows else a  # padded, in
    chunks = width // CHUNK
    xt = _computed(x.t().contiguous()).view(chunks, CHUNK, padded)  # chunks, chunk, padded
    w = b.t().reshape(b.shape[1], chunks, CHUNK)  # out, chunks, chunk
    partial = (w[:, :, :, None] * xt[None]).sum(2)  # out, chunks, chunk, padded -> out, chunks, padded
    return partial.sum(1).t()[:rows]  # out, padded -> rows, out


def _product(a, b):
    """a (rows, in) @ b (in, out): several rows share each weight read where the chunks divide ``in``."""
    if a.shape[0] == 1 or a.shape[1] % CHUNK:
        return _row_loops(a, b)
    return _rows_product(a, b)


def _mm(a, b, out_dtype=None):
    """a (rows, in) @ b (in, out) -> (rows, out), as sum over in."""
    if out_dtype is not None or not _few(a.shape[0]):
        return NotImplemented
    return _product(a, b)


def _addmm(bias, a, b, out_dtype=None, beta=1, alpha=1):
    """bias + a (rows, in) @ b (in, out) -> (rows, out)."""
    if out_dtype is not None or beta != 1 or alpha != 1 or not _few(a.shape[0]):
        return NotImplemented
    return _product(a, b) + bias  # rows, out


def _bmm(a, b, out_dtype=None):
    """a (batch, rows, in) @ b (batch, in, out) -> (batch, rows, out): one query against the keys."""
    if out_dtype is not None or not _few(a.shape[1]):
        return NotImplemented
    return (a[:, :, :, None] * b[:, None]).sum(2)  # batch, rows, in, out -> batch, rows, out


def decompositions(few_rows: bool = True) -> dict:
    """Inductor's decomposition table with the few-row products above in place of the BLAS calls; without
    ``few_rows`` only the attention's (``bmm``: one query against the keys), the weight products left to
    inductor's lowering (its C++ GEMM template with ``max_autotune``: seqlab.decoding.decode.inductor_options)."""
    from torch._inductor.decomposition import select_decomp_table

    ours = {_aten.mm.default: _mm, _aten.addmm.default: _addmm} if few_rows else {}
    return {**select_decomp_table(), **ours, _aten.bmm.default: _bmm}


def backend(gm, example_inputs, few_rows: bool = True, **config):
    """torch.compile backend: inductor (with ``config`` patched, e.g. ``cpp_wrapper=True``) over
    ``decompositions(few_rows)``."""
    from torch._inductor.compile_fx import compile_fx

    return compile_fx(gm, example_inputs, config_patches=config or None, decompositions=decompositions(few_rows))
