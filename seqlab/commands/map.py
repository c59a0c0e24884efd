"""`seqlab map RUN --words N --out FILE.png`: a t-SNE map of the N most frequent words, labelled."""

from seqlab.commands import add_parser


def add(sub):
    p = add_parser(sub, "map", "draw a 2-D t-SNE map of the most frequent words' vectors",
                   "seqlab map runs/w2v-sgns --words 300 --out plots/words.png")
    p.add_argument("run_dir", metavar="RUN", help="an embedding run directory, or a vectors file (.txt, .safetensors)")
    p.add_argument("--words", type=int, default=200, metavar="N", help="how many words, most frequent first")
    p.add_argument("--out", required=True, metavar="FILE.png")
    p.add_argument("--seed", type=int, default=0, help="t-SNE's random state")
    p.set_defaults(run=run)


def run(args) -> int:
    from seqlab.api import open_vectors
    from seqlab.vectors.keyed import tsne_map
    from seqlab.views.viz import embedding_map_figure, save_figure

    kv = open_vectors(args.run_dir)  # a run's vectors or a vectors file: the map of Embeddings.map, drawn
    words, coords = tsne_map(kv, args.words, seed=args.seed)
    title = f"t-SNE of the {len(words)} most frequent words"
    print(save_figure(embedding_map_figure(words, coords, title), args.out))
    return 0
