"""`seqlab attention RUN --text TEXT --out FILE.png`: attention heatmaps, one per layer and head."""

from seqlab.commands import add_last, add_parser


def add(sub):
    p = add_parser(sub, "attention", "draw a trained model's attention weights for a text",
                   'seqlab attention runs/demo --text "your cat is a lovely cat" --out attention.png')
    p.add_argument("run_dir", metavar="RUN")
    p.add_argument("--text", required=True)
    p.add_argument("--out", required=True, metavar="FILE.png")
    p.add_argument("--device", default=None)
    add_last(p)
    p.set_defaults(run=run)


def run(args) -> int:
    from seqlab.api import load
    from seqlab.errors import SeqlabError
    from seqlab.viz import plot_attention

    obj = load(args.run_dir, device=args.device, last=args.last)
    if not hasattr(obj, "attention"):
        raise SeqlabError(f"{args.run_dir} is a {obj.config.task.kind} run, which has no attention maps")
    result = obj.attention(args.text)
    if len(result) == 3:  # translation: (source tokens, target tokens, (heads, target, source))
        src, tgt, weights = result
        titles = [f"head {h}" for h in range(weights.shape[0])] if weights.shape[0] > 1 else ["attention"]
        print(plot_attention(tgt, src, weights.numpy(), args.out, titles=titles))
        return 0
    tokens, layers = result  # language model: per layer (heads, seq, seq)
    maps = [w[h].numpy() for w in layers for h in range(w.shape[0])]
    titles = [f"layer {i} head {h}" for i, w in enumerate(layers) for h in range(w.shape[0])]
    print(plot_attention(tokens, tokens, maps, args.out, titles=titles, cols=layers[0].shape[0]))
    return 0
