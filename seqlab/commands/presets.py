"""`seqlab presets`: list the ready configs, one line each."""

from seqlab.commands import add_parser


def add(sub):
    p = add_parser(sub, "presets", "list the presets with one line each", "seqlab presets")
    p.set_defaults(run=run)


def run(args) -> int:
    from seqlab.base.config import preset_names, preset_summary

    names = preset_names()
    width = max(map(len, names))
    for name in names:
        print(f"{name:<{width}}  {preset_summary(name)}")
    return 0
