"""`seqlab train PRESET|FILE.toml [--set section.key=value ...] [--out DIR] [--resume [auto]] [--force]`."""

from seqlab.commands import add_parser


def add(sub):
    p = add_parser(sub, "train", "train a preset or a TOML config into a run directory",
                   "seqlab train lm-char --set train.max_steps=500 --set model.n_layers=2 --out runs/char",
                   description="Train a preset (see `seqlab presets`) or a TOML file with sections task, data, "
                               "model, train. Under torchrun it trains on every process (DDP).")
    p.add_argument("config", metavar="PRESET|FILE.toml")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override one config key (repeatable), e.g. --set train.lr=3e-4")
    p.add_argument("--out", metavar="DIR", help="run directory (default: runs/PRESET)")
    p.add_argument("--resume", nargs="?", const=True, default=False, type=_resume, metavar="auto",
                   help="continue the run in --out from its last checkpoint (an error when --out does not exist); "
                        "--resume auto continues it when it exists and starts it otherwise (requeue scripts)")
    p.add_argument("--force", action="store_true",
                   help="replace an existing run directory (a run seqlab wrote, or what a killed start left; a "
                        "folder holding anything else is refused)")
    p.set_defaults(run=run)


def _resume(value: str) -> str:
    import argparse

    if value != "auto":
        raise argparse.ArgumentTypeError(f"takes no value or 'auto', got {value!r}")
    return value


def run(args) -> int:
    import sys

    from seqlab.api import Interrupted, train_run

    try:
        run_dir = train_run(args.config, args.out, overrides=args.overrides, resume=args.resume, force=args.force,
                        log=lambda *a, **k: print(*a, **{"file": sys.stderr, **k}))
    except Interrupted as e:
        print(str(e), file=sys.stderr)
        return e.exit_code
    print(run_dir)
    return 0
