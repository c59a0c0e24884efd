"""`seqlab embed RUN_OR_DIR [--out FILE.npy] < sentences`: one mean-pooled, L2-normalised vector per input line.

Without ``--out``: one line per sentence of space-separated floats (9 significant digits, exact for float32).
With ``--out FILE.npy``: an array of shape (sentences, dim), written atomically.
"""

from seqlab.commands import add_parser


def add(sub):
    p = add_parser(sub, "embed", "print the sentence embedding of each input line (mean-pooled, L2-normalised)",
                   "seqlab embed all-MiniLM-L6-v2 --out vectors.npy < sentences.txt")
    p.add_argument("model", metavar="RUN_OR_DIR",
                   help="a BERT-style directory, the name all-MiniLM-L6-v2, or a run fine-tuned from one")
    p.add_argument("--out", metavar="FILE.npy", help="save an array (sentences, dim) instead of printing")
    p.add_argument("--batch-size", type=int, default=32, help="sentences per forward pass (default 32)")
    p.add_argument("--device", default=None, help="cpu, cuda (default: cuda when available)")
    p.set_defaults(run=run)


def run(args) -> int:
    import sys
    from pathlib import Path

    from seqlab.api import open_encoder
    from seqlab.base.errors import SeqlabError

    out = Path(args.out) if args.out else None
    if out is not None and out.suffix != ".npy":
        raise SeqlabError(f"--out {out} must end in .npy; e.g. --out vectors.npy")
    if args.batch_size < 1:
        raise SeqlabError(f"--batch-size must be >= 1, got {args.batch_size}")
    try:
        sentences = sys.stdin.read().splitlines()
    except UnicodeDecodeError as e:
        raise SeqlabError(f"stdin is not valid UTF-8 ({e.reason} at byte {e.start}); give UTF-8 text") from None
    if not sentences:
        raise SeqlabError("no sentences on stdin; pipe one sentence per line, e.g. seqlab embed MODEL < sentences.txt")
    vectors = open_encoder(args.model, args.device).embed(sentences, batch_size=args.batch_size)
    if out is not None:
        _save_npy(out, vectors)
        return 0
    write = sys.stdout.write
    for v in vectors:
        write(" ".join(format(float(x), ".9g") for x in v) + "\n")
    return 0


def _save_npy(path, array) -> None:
    """np.save through a temporary file in the same folder and a rename (never a partial file)."""
    import numpy as np

    from seqlab.base.io import atomic_path

    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        np.save(f, array)
