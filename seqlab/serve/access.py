"""Who may call ``seqlab serve``: the middleware every request passes, whatever server runs the app.

- Without a token it answers loopback clients only (127.0.0.0/8, ::1): any other client address gets 403. The
  ``Host`` header must also be a loopback name, so that a web page elsewhere cannot reach the API through DNS
  rebinding (that check guards the browser, it is not authentication).
- With a token, every request carries it, as ``Authorization: Bearer T`` or in the ``seqlab_token`` cookie
  (HttpOnly, SameSite=Strict). A page opened with ``?token=T`` sets the cookie and redirects (303) to the same
  URL without the token, so the token stays out of logs and history; a request without it gets 401.
"""

from __future__ import annotations

import hmac
import ipaddress
from urllib.parse import urlencode

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, RedirectResponse

LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}
COOKIE = "seqlab_token"


def guard(app: FastAPI, token: str | None) -> None:
    """Add the access check to ``app``: loopback only without ``token``, the token on every request with one."""

    @app.middleware("http")
    async def access(request: Request, call_next):
        refused = _refused_without_token(request) if token is None else _refused_without(token, request)
        return refused if refused is not None else await call_next(request)


def _refused_without_token(request: Request):
    """A 403 for a client or a ``Host`` that is not this machine; None to go on."""
    client = request.client.host if request.client else ""
    if not is_loopback(client):
        return JSONResponse({"detail": f"client {client or 'unknown'} refused: seqlab serve without --token "
                                       "answers this machine only; start it with --token TOKEN to serve "
                                       "others"}, status_code=403)
    header = request.headers.get("host") or ""
    host = header[:header.find("]") + 1] if header.startswith("[") else header.rsplit(":", 1)[0]
    if host not in LOOPBACK:
        return JSONResponse({"detail": f"host {host!r} refused: seqlab serve without --token answers "
                                       "127.0.0.1 and localhost only"}, status_code=403)
    return None


def _refused_without(token: str, request: Request):
    """The redirect that moves ``?token=`` into the cookie, a 401 without the token; None to go on."""
    query = request.query_params.get("token")
    if query is not None and request.method in ("GET", "HEAD") and _same(query, token):
        rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
        target = request.url.path + ("?" + urlencode(rest) if rest else "")
        response = RedirectResponse(target, status_code=303)  # the token leaves the URL: logs, history
        response.set_cookie(COOKIE, token, httponly=True, samesite="strict")
        return response
    if not _same(_bearer(request) or request.cookies.get(COOKIE) or "", token):
        return JSONResponse({"detail": "a token is required: send `Authorization: Bearer TOKEN`, or open "
                                       "a page once with ?token=TOKEN"}, status_code=401)
    return None


def is_loopback(address: str) -> bool:
    """Whether a client address is this machine: 127.0.0.0/8, ::1, or IPv4-mapped loopback."""
    try:
        ip = ipaddress.ip_address(address.strip("[]"))
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or bool(mapped and mapped.is_loopback)


def _same(given: str, token: str) -> bool:
    return hmac.compare_digest(given.encode(), token.encode())


def _bearer(request: Request) -> str | None:
    value = request.headers.get("authorization") or ""
    return value[7:].strip() if value.lower().startswith("bearer ") else None
