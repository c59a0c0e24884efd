"""`seqlab predict RUN [--beam K | --steps N] [--format text|json] < inputs`: one output line per input line."""

from seqlab.commands import add_last, add_parser


def add(sub):
    p = add_parser(sub, "predict", "run a trained tagger, classifier, translator or forecaster on stdin",
                   "seqlab predict runs/ner < sentences.txt")
    p.add_argument("run_dir", metavar="RUN")
    p.add_argument("--beam", type=int, default=None, help="beam size (translation)")
    p.add_argument("--steps", type=int, default=None, help="forecast horizon (forecasting; reads no stdin)")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.add_argument("--device", default=None)
    add_last(p)
    p.set_defaults(run=run)


def run(args) -> int:
    import json
    import sys

    from seqlab.api import load
    from seqlab.base.errors import SeqlabError

    obj = load(args.run_dir, device=args.device, last=args.last)
    if not hasattr(obj, "predict"):
        raise SeqlabError(f"{args.run_dir} is a {obj.config.task.kind} run, which has no predict; "
                          "for a language model use `seqlab generate`")
    kind = obj.config.task.kind
    if kind == "forecast" and args.steps is None:
        raise SeqlabError("a forecast run predicts --steps N values after the series and reads no input; "
                          f"e.g. seqlab predict {args.run_dir} --steps 12")
    if kind != "forecast" and args.steps is not None:
        raise SeqlabError(f"--steps is for forecast runs; {args.run_dir} is a {kind} run that reads lines on stdin")
    if args.beam is not None and kind != "translate":
        raise SeqlabError(f"--beam is for translation runs; {args.run_dir} is a {kind} run")
    options = {k: v for k, v in (("beam", args.beam), ("steps", args.steps)) if v is not None}
    lines = None if kind == "forecast" else [line.rstrip("\n") for line in sys.stdin]
    for result in obj.predict(lines, **options):
        print(json.dumps(result) if args.format == "json" else obj.format_prediction(result))
    return 0
