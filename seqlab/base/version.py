"""seqlab's version string: the one place it is written (the package root, pyproject's dynamic version, BLEU and
chrF signatures, run directories' library versions and the web inspector all read it from here)."""

__version__ = "0.1.0"
