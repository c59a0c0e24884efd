"""One module per command-line verb; see :mod:`seqlab.cli` for the contract."""

import argparse


def add_parser(sub, name: str, help: str, example: str, description: str | None = None):
    """Register a verb with its one-line help and an example in its --help epilog."""
    return sub.add_parser(
        name,
        help=help,
        description=description or help,
        epilog=f"example:\n  {example}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def add_last(p) -> None:
    """``--last``: read the run's final checkpoint instead of its best one (docs/manual.md, "A run directory")."""
    p.add_argument("--last", action="store_true",
                   help="use the final checkpoint instead of the best validation one (best/, the default)")
