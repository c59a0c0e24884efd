"""`seqlab eval RUN [--split valid|test]`: the task's metrics as one JSON object."""

from seqlab.commands import add_last, add_parser


def add(sub):
    p = add_parser(sub, "eval", "print a trained run's metrics on a split as one JSON object",
                   "seqlab eval runs/demo --split test")
    p.add_argument("run_dir", metavar="RUN")
    p.add_argument("--split", default="test", choices=["valid", "test"])
    p.add_argument("--device", default=None)
    add_last(p)
    p.set_defaults(run=run)


def run(args) -> int:
    import json

    from seqlab.api import load

    print(json.dumps(load(args.run_dir, device=args.device, last=args.last).evaluate(split=args.split)))
    return 0
