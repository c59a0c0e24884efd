"""`seqlab serve [RUNS_DIR|RUN ...] [--host 127.0.0.1] [--port 8000] [--token T]`: web inspector + JSON API."""

from seqlab.commands import add_parser

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def add(sub):
    p = add_parser(sub, "serve", "a local web inspector and JSON API for trained runs",
                   "seqlab serve runs --port 8000      then open http://127.0.0.1:8000/",
                   description="Serves every run under the given folders (default: runs): pages per task "
                               "(streaming generation, attention, translation alignments, entities, label "
                               "probabilities, embedding maps, forecasts) and the JSON API documented at /docs. "
                               "Binds to 127.0.0.1 and answers this machine only. Any other --host serves "
                               "other machines with a token: --token T, or one generated and printed in the "
                               "URL to open. Needs the serve extra: pip install 'seqlab[serve]'.")
    p.add_argument("roots", nargs="*", metavar="RUNS_DIR|RUN", help="folders of runs, or run directories (default: runs)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--token", default=None, help="clients send `Authorization: Bearer TOKEN` or open a page once "
                                                  "with ?token=TOKEN (default with a --host other than 127.0.0.1: "
                                                  "a generated token, printed in the URL)")
    p.add_argument("--cache", type=int, default=4, metavar="N", help="models kept loaded (least recently used beyond N)")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    p.set_defaults(run=run)


def run(args) -> int:
    import importlib.util
    import socket

    from seqlab.base.errors import SeqlabError
    from seqlab.serve import EXTRA

    if any(importlib.util.find_spec(name) is None for name in EXTRA):
        raise SeqlabError("seqlab serve needs the serve extra: pip install 'seqlab[serve]'")
    token = args.token
    if args.host not in LOOPBACK and not token:
        import secrets

        token = secrets.token_urlsafe(18)  # other machines can reach the runs: never without a token
    if not 0 <= args.port <= 65535:
        raise SeqlabError(f"--port must be in 0..65535, got {args.port}")
    if args.cache < 1:
        raise SeqlabError(f"--cache must be >= 1, got {args.cache}")
    roots = args.roots or ["runs"]
    from seqlab.serve.app import create_app

    app = create_app(roots, token=token, cache_size=args.cache, device=args.device)
    sock = bind(args.host, args.port)
    import uvicorn

    host, port = sock.getsockname()[:2]
    if host in ("0.0.0.0", "::"):  # every address of this machine: show its name
        host = socket.gethostname()
    shown = f"[{host}]" if ":" in host else host
    n = len(app.state.index.ids())
    query = f"?token={token}" if token and not args.token else ""  # a token the user gave is theirs to keep
    print(f"seqlab serve: http://{shown}:{port}/{query} ({n} run{'s' * (n != 1)} under {', '.join(roots)}; "
          f"API at /docs; Ctrl-C stops)", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    server.run(sockets=[sock])
    return 0


def bind(host: str, port: int):
    """The listening socket, or one error line when the port is taken or the address is not this machine's."""
    import errno
    import socket

    from seqlab.base.errors import SeqlabError

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise SeqlabError(f"port {port} on {host} is in use; choose another with --port "
                              f"(e.g. --port {port + 1})") from None
        raise SeqlabError(f"cannot listen on {host}:{port} ({e.strerror}); give an address of this machine "
                          "with --host") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock
