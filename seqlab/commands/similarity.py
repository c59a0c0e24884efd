"""`seqlab similarity RUN_OR_DIR TEXT_A TEXT_B`: the cosine of two sentences' embeddings."""

from seqlab.commands import add_parser


def add(sub):
    p = add_parser(sub, "similarity", "print the cosine similarity of two sentences' embeddings",
                   'seqlab similarity all-MiniLM-L6-v2 "A man is eating food." "A man is eating a meal."')
    p.add_argument("model", metavar="RUN_OR_DIR",
                   help="a BERT-style directory, the name all-MiniLM-L6-v2, or a run fine-tuned from one")
    p.add_argument("text_a", metavar="TEXT_A")
    p.add_argument("text_b", metavar="TEXT_B")
    p.add_argument("--device", default=None, help="cpu, cuda (default: cuda when available)")
    p.set_defaults(run=run)


def run(args) -> int:
    from seqlab.api import open_encoder

    print(f"{open_encoder(args.model, args.device).similarity(args.text_a, args.text_b):.6f}")
    return 0
