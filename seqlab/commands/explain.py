"""`seqlab explain`: the worked example of the notes (Transformer), every tensor with its shape and named dims."""

from __future__ import annotations

import argparse

from seqlab.commands import add_parser


def add(sub) -> None:
    p = add_parser(
        sub,
        "explain",
        help="the worked example of the notes, every tensor with its named dims",
        example="seqlab explain --seed 0",
        description="Trace the notes' worked example (3 sentences, d_model 4, max_len 4, 2 heads of depth 2): "
        "embeddings + PE, q/k/v heads, attention weights, merged output; each tensor printed with its "
        "shape, its dimension names and its values.",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the projection weights W_q, W_k, W_v, W_o (default 0)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from seqlab.views import explain

    print(explain.render(explain.trace(args.seed), args.seed))
    return 0
