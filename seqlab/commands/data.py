"""``seqlab data list``, ``seqlab data get NAME [--force]`` (the corpora and the download cache) and
``seqlab data prepare PRESET|FILE.toml [--set ...] --out DIR [--force]`` (tokenize once, for ``data.prepared``)."""

from __future__ import annotations

import argparse

from seqlab.commands import add_parser
from seqlab.base.errors import SeqlabError


def add(sub) -> None:
    p = add_parser(
        sub,
        "data",
        help="list the corpora; download a public dataset into the cache",
        example="seqlab data get tinyshakespeare",
        description="List the corpora (embedded, downloadable) or download one into $SEQLAB_CACHE "
        "(default ~/.cache/seqlab), verifying the SHA-256 of every file. SEQLAB_MIRROR replaces "
        "https://raw.githubusercontent.com for a local mirror.",
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    add_parser(
        actions, "list", help="table of the corpora: name, kind, cached, description", example="seqlab data list"
    )
    get = add_parser(
        actions,
        "get",
        help="download a dataset (if not cached), verify checksums, print its terms of use and path",
        example="seqlab data get multi30k",
    )
    get.add_argument("name", metavar="NAME", help="dataset name, as listed by `seqlab data list`")
    get.add_argument("--force", action="store_true", help="download again even if cached")
    get.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    prep = add_parser(
        actions,
        "prepare",
        help="tokenize a config's corpus once, in parallel, into DIR (tokenizer, token shards, manifest.json)",
        example="seqlab data prepare lm-bpe --set data.source=big.txt --out prepared/big-bpe\n"
                "  seqlab train lm-bpe --set data.prepared=prepared/big-bpe --out runs/big",
        description="Read the corpus of a config (data.source, or data.train/valid/test) in pieces, train its "
        "tokenizer on the train split (the first data.tokenizer_sample_mb MB of it when set), encode every split "
        "in worker processes (one per core) and write DIR/{train,valid,test}.bin (uint16 ids, uint32 for a "
        "vocabulary over 65,536), DIR/tokenizer.json and DIR/manifest.json. DIR appears complete or not at all. "
        "Runs reuse it with --set data.prepared=DIR (refused when a data.* key that decides the tokens "
        "differs). Language modelling (task.kind = lm) only.",
    )
    prep.add_argument("config", metavar="PRESET|FILE.toml")
    prep.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                      help="override one config key (repeatable), e.g. --set data.source=big.txt")
    prep.add_argument("--out", metavar="DIR", required=True, help="the folder to write (must not exist)")
    prep.add_argument("--force", action="store_true",
                      help="replace an existing DIR (once the new one is complete) when it is a seqlab output, a "
                           "prepared corpus or a run; a folder holding anything else is refused")
    prep.add_argument("--no-progress", action="store_true", help="no progress bars on stderr")
    p.set_defaults(run=run, action=None)


def run(args: argparse.Namespace) -> int:
    from seqlab.data import download, sources

    if args.action == "list":
        rows = sources.list_sources()
        width = max(len(r["name"]) for r in rows)
        print(f"{'name':<{width}}  {'kind':<8}  {'cached':<6}  description")
        for r in rows:
            cached = "yes" if r["cached"] else "no"
            print(f"{r['name']:<{width}}  {r['kind']:<8}  {cached:<6}  {r['description']}")
        return 0
    if args.action == "get":
        if args.name in sources.EMBEDDED:
            print(f"{args.name} is embedded in Python: nothing to download (use data.source = {args.name!r})")
            return 0
        ds = download.dataset(args.name)
        print(f"terms of use: {ds.terms}")
        path = download.get(ds.name, force=args.force, progress=not args.no_progress)
        print(path if path.is_dir() else download.cache_dir() / ds.main)  # a dataset in a shared folder: its file
        return 0
    if args.action == "prepare":
        import sys

        from seqlab.api import prepare
        from seqlab.data.lm_tokens import text_bytes

        m = prepare(args.config, args.out, overrides=args.overrides, force=args.force, progress=not args.no_progress)
        mb = text_bytes(m) / 1e6
        tokens = ", ".join(f"{s} {n:,}" for s, n in m["tokens"].items())
        print(f"prepared {mb:,.1f} MB in {m['seconds']:.1f} s ({mb / max(m['seconds'], 1e-9):,.1f} MB/s): {tokens} "
              f"{m['dtype']} tokens, {m['tokenizer']['kind']} vocabulary {m['tokenizer']['vocab_size']:,}",
              file=sys.stderr)
        print(args.out)
        return 0
    raise SeqlabError("missing action; use `seqlab data list`, `seqlab data get NAME` or `seqlab data prepare ...`")
