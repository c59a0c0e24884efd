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
    from seqlab.base.errors import SeqlabError
    from seqlab.views.viz import save_figure

    obj = load(args.run_dir, device=args.device, last=args.last)
    if not hasattr(obj, "attention"):
        raise SeqlabError(f"{args.run_dir} is a {obj.config.task.kind} run, which has no attention maps")
    # a language model's maps (a row of heads per layer) or a translation's (one per head): tasks.results
    print(save_figure(obj.attention(args.text).plot(), args.out))
    return 0
