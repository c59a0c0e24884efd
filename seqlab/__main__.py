"""``python -m seqlab``: the same command line as the ``seqlab`` console script."""

from seqlab.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
