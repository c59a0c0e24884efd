"""`seqlab analogy RUN A B C [-k K]`: A is to B as C is to ?, one `WORD<TAB>COSINE` per line, best first."""

from seqlab.commands import add_parser


def add(sub):
    p = add_parser(sub, "analogy", "answer 'A is to B as C is to ?' with word vectors (3CosAdd)",
                   "seqlab analogy runs/w2v-sgns man king woman -k 5")
    p.add_argument("run_dir", metavar="RUN", help="an embedding run directory, or a vectors file (.txt, .safetensors)")
    p.add_argument("a", metavar="A")
    p.add_argument("b", metavar="B")
    p.add_argument("c", metavar="C")
    p.add_argument("-k", type=int, default=10, help="how many answers (default 10)")
    p.add_argument("--method", choices=["3cosadd", "3cosmul"], default="3cosadd",
                   help="3cosadd: cosine with e_B - e_A + e_C (scores are cosines); 3cosmul: Levy & Goldberg's product")
    p.set_defaults(run=run)


def run(args) -> int:
    from seqlab.api import open_vectors
    from seqlab.base.errors import SeqlabError

    if args.k < 1:
        raise SeqlabError(f"-k must be >= 1, got {args.k}")
    for word, score in open_vectors(args.run_dir).analogy(args.a, args.b, args.c, topn=args.k, method=args.method):
        print(f"{word}\t{score:.6f}")
    return 0
