"""`seqlab neighbors RUN WORD [-k K]`: a word's nearest neighbours by cosine, one `WORD<TAB>COSINE` per line."""

from seqlab.commands import add_parser


def add(sub):
    p = add_parser(sub, "neighbors", "print the words closest to a word by cosine similarity",
                   "seqlab neighbors runs/w2v-sgns function -k 10")
    p.add_argument("run_dir", metavar="RUN", help="an embedding run directory, or a vectors file (.txt, .safetensors)")
    p.add_argument("word", metavar="WORD")
    p.add_argument("-k", type=int, default=10, help="how many neighbours (default 10)")
    p.set_defaults(run=run)


def run(args) -> int:
    from seqlab.api import open_vectors
    from seqlab.base.errors import SeqlabError

    if args.k < 1:
        raise SeqlabError(f"-k must be >= 1, got {args.k}")
    for word, cosine in open_vectors(args.run_dir).most_similar(args.word, topn=args.k):
        print(f"{word}\t{cosine:.6f}")
    return 0
