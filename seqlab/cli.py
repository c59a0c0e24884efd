"""The command line: one verb per job. Thin: parse arguments, call the library, print.

Each verb lives in its own module under ``seqlab/commands/`` with two functions:
``add(subparsers)`` registers the verb's parser (help text with an example) and
``run(args)`` does the work and returns an exit code. Modules import heavy libraries
(torch, matplotlib) inside ``run`` so that ``seqlab --help`` stays fast.

Errors (docs/manual.md, "Rules of the code"): bad input is one line on stderr starting ``error:`` and exit code 2;
so is a full disk.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from seqlab.base.version import __version__
from seqlab.base.errors import SeqlabError, command_line

# The verbs, in the order `seqlab --help` lists them; each is a module in seqlab/commands.
COMMANDS = [
    "demo",
    "presets",
    "train",
    "generate",
    "eval",
    "predict",
    "attention",
    "bleu",
    "neighbors",
    "analogy",
    "map",
    "embed",
    "similarity",
    "explain",
    "export",
    "data",
    "serve",
    "course",
]

EXAMPLES = """\
examples:
  seqlab demo                                   train a small Transformer LM, report perplexity, generate
  seqlab presets                                list the ready configs
  seqlab train lm-char --set train.max_steps=500 --out runs/char
  seqlab generate runs/char --prompt "def " --max-new-tokens 200 --temperature 0.8 --top-p 0.95
  seqlab eval runs/char --split test
  seqlab predict runs/ner < sentences.txt
  seqlab attention runs/char --text "def main():" --out attention.png
  seqlab bleu hyp.txt ref.txt --tokenize 13a
  seqlab train w2v-sgns --set data.source=corpus.txt --out runs/w2v
  seqlab neighbors runs/w2v king -k 10
  seqlab analogy runs/w2v man king woman           man is to king as woman is to ?
  seqlab map runs/w2v --words 300 --out map.png
  seqlab embed all-MiniLM-L6-v2 --out vectors.npy < sentences.txt
  seqlab similarity all-MiniLM-L6-v2 "a cat sat" "a cat was sitting"
  seqlab explain                                the worked example of the notes, every tensor named
  seqlab export runs/char --format hf --out exports/char    GPT2LMHeadModel + tokenizer.json
  seqlab data list
  seqlab data get tinyshakespeare
  seqlab serve runs                             web inspector + JSON API on http://127.0.0.1:8000/
  seqlab course check 06.1 my_attention.py      check your solution of an exercise against seqlab's
"""


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors follow the contract: one `error:` line, exit 2."""

    def error(self, message: str):  # noqa: D401 - argparse API
        self.exit(2, f"error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="seqlab",
        description="Sequence models from AR(p) to the Transformer: train, evaluate, inspect.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"seqlab {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="VERB", parser_class=_Parser)
    for name in COMMANDS:
        importlib.import_module(f"seqlab.commands.{name}").add(sub)
    return parser


def _show_library_log() -> None:
    """The library logs through ``logging`` (logger "seqlab"); the command line shows its INFO lines on stderr."""
    import logging

    logger = logging.getLogger("seqlab")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)


def main(argv: list[str] | None = None) -> int:
    with command_line():  # messages name --force, --out, ... rather than force=True, out=
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    _show_library_log()
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help()
        return 0
    try:
        if getattr(args, "threads", 0):  # the command line owns the process: it alone sets the thread count
            if args.threads < 0:
                raise SeqlabError(f"--threads must be >= 1 (0 = torch's default), got {args.threads}")
            import torch

            torch.set_num_threads(args.threads)
        return int(args.run(args) or 0)
    except SeqlabError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a full disk while writing an --out file: it was written to a temporary, now removed
        from seqlab.base.io import disk_full_message, is_disk_full

        if not is_disk_full(e):
            raise
        print(f"error: {disk_full_message(e)}; nothing was written to it; free some space and run again",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `seqlab generate ... | head`
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
