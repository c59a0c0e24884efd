"""``seqlab data list`` and ``seqlab data get NAME [--force]``: the corpora and the download cache."""

from __future__ import annotations

import argparse

from seqlab.commands import add_parser
from seqlab.errors import SeqlabError


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
        print(path)
        return 0
    raise SeqlabError("missing action; use `seqlab data list` or `seqlab data get NAME`")
