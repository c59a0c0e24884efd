"""``seqlab bleu HYP REF [REF ...]``: BLEU of a hypothesis file, identical to sacreBLEU's CLI.

Files are read as sacreBLEU reads them: UTF-8 (a byte-order mark is kept, as part of the first
segment), one segment per ``\\n``-terminated line, trailing whitespace stripped. JSON by default, one
object on one line with the score unrounded; ``--format text`` prints sacreBLEU's line,
``BLEU|SIGNATURE = SCORE ...``, with ``--width`` decimals (1, as sacreBLEU's CLI). ``--sentence-level``
prints one line per segment and turns effective order on, as ``sacrebleu -sl`` does.
"""

from __future__ import annotations

import argparse
import json
import sys

from seqlab.commands import add_parser
from seqlab.base.errors import SeqlabError

TOKENIZERS = ["13a", "intl", "char", "none"]
SMOOTH_METHODS = ["exp", "floor", "add-k", "none"]


def add(sub) -> None:
    p = add_parser(
        sub,
        "bleu",
        help="BLEU of a hypothesis file against one or more reference files (identical to sacreBLEU)",
        example="seqlab bleu hyp.txt ref.txt --tokenize 13a",
        description="BLEU of HYP (one detokenised segment per line; - reads stdin) against one or more "
        "reference files aligned with it, computed exactly as sacreBLEU 2.6.0 does. Prints one JSON "
        "object (score unrounded) or, with --format text, sacreBLEU's `BLEU|signature = score ...` line.",
    )
    p.add_argument("hyp", metavar="HYP", help="hypothesis file, one segment per line (- for stdin)")
    p.add_argument("refs", metavar="REF", nargs="+", help="reference file(s), as many lines as HYP")
    p.add_argument("--tokenize", choices=TOKENIZERS, default="13a", help="tokenizer (default: 13a)")
    p.add_argument("--smooth-method", choices=SMOOTH_METHODS, default="exp", help="smoothing (default: exp)")
    p.add_argument("--smooth-value", type=float, default=None, metavar="V",
                   help="value for floor (default 0.1) or add-k (default 1)")
    p.add_argument("--lowercase", action="store_true", help="case-insensitive BLEU")
    p.add_argument("--sentence-level", action="store_true",
                   help="one score per segment (effective order on, as sacreBLEU -sl)")
    p.add_argument("--format", choices=["json", "text"], default="json", help="output format (default: json)")
    p.add_argument("--width", type=int, default=1, metavar="N",
                   help="decimals of the score in --format text (default: 1, as sacreBLEU)")
    p.set_defaults(run=run)


def read_lines(path: str) -> list[str]:
    """The file's lines as sacreBLEU's CLI reads them (UTF-8 with any BOM kept, split on \\n, rstripped)."""
    try:
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as f:
                data = f.read()
    except FileNotFoundError:
        raise SeqlabError(f"{path}: no such file; check the path") from None
    except IsADirectoryError:
        raise SeqlabError(f"{path} is a directory; give a text file with one segment per line") from None
    except OSError as e:
        raise SeqlabError(f"cannot read {path}: {e.strerror}; check the path and its permissions") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SeqlabError(f"{path} is not UTF-8 (byte {data[e.start]:#04x} at offset {e.start}); "
                          f"convert it, e.g. iconv -f LATIN1 -t UTF-8") from None
    lines = text.split("\n")
    if lines[-1] == "":  # the newline that ends the last line does not start another
        lines.pop()
    return [line.rstrip() for line in lines]


def run(args: argparse.Namespace) -> int:
    from seqlab.metrics.bleu import BLEU

    if args.width < 0:
        raise SeqlabError(f"--width must be >= 0, got {args.width}")
    hyps = read_lines(args.hyp)
    if not hyps:
        raise SeqlabError(f"{args.hyp} is empty; give one hypothesis per line")
    refs = [read_lines(path) for path in args.refs]
    for path, stream in zip(args.refs, refs):
        if len(stream) != len(hyps):
            raise SeqlabError(f"{args.hyp} has {len(hyps)} lines but {path} has {len(stream)}; "
                              "give files with one aligned segment per line")
    metric = BLEU(lowercase=args.lowercase, tokenize=args.tokenize, smooth_method=args.smooth_method,
                  smooth_value=args.smooth_value, effective_order=args.sentence_level)
    scores = metric.sentence_scores(hyps, refs) if args.sentence_level else [metric.corpus_score(hyps, refs)]
    out = sys.stdout
    for score in scores:
        if args.format == "json":
            out.write(json.dumps(score.to_dict(), ensure_ascii=False) + "\n")
        else:
            out.write(score.format(width=args.width, signature=score.signature) + "\n")
    return 0
