"""The ``pyprose`` embedded corpus: English prose from the running Python, with its tables and code taken out.

``pydocs`` alone (about 0.4M characters, a third of it tables, grammar and examples) is small enough for the demo
LM to memorise. ``pyprose`` adds the docstrings of a fixed list of standard-library modules
(:data:`PYPROSE_MODULES`), read from their source with :mod:`ast` (a module is never imported: ``this`` and
``antigravity`` run code when imported), four times as much text, filtered (:func:`strip_code`): doctest
blocks, literal blocks, code directives, grid and simple tables and lines of mostly symbols go, the prose
paragraphs stay.

Layout: the pydocs text (verbatim) and the docstrings are each cut at the default split (0.9 / 0.05 / 0.05) and
interleaved, ``P_train D_train P_valid D_valid P_test D_test``, with the docstring cuts chosen so that
:func:`~seqlab.data.text_split.split_points` of the whole text falls exactly on the boundaries. So with the
default ``data.split`` a pyprose run's test split is the pydocs corpus's test split followed by unseen
docstrings, and no pydocs test character is in its training split: a model trained on either corpus can be
scored on exactly the same pydocs test characters. Within the docstrings each module (its docstrings in
source order) is a document, in the order of the SHA-1 of its name, so every split mixes modules. The text
depends on the Python version only; :func:`pyprose_manifest` says what went in.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import logging
import platform
import re
import sysconfig
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from seqlab.data.bundled import pydocs_text, pystdlib_files
from seqlab.data.text_split import DEFAULT_SPLIT, split_points

log = logging.getLogger("seqlab")

MIN_DOC_CHARS = 40  # a docstring shorter than this after filtering is a signature line ("Return self+value.")
DOC_SEP = "\n\n"  # between docstrings of a module and between documents

# Standard-library modules whose docstrings are broad English prose. Left out: tests, generated modules
# (encodings.*, pydoc_data), application internals (idlelib, turtledemo), 2to3 fixers and modules whose
# docstrings are mostly code or tables. Modules removed in later Pythons (cgi, telnetlib, distutils, ...) stay
# listed: where they are missing they are recorded in the manifest.
PYPROSE_MODULES: tuple[str, ...] = (
    "__future__", "_collections_abc", "_py_abc", "_pydecimal", "_pyio", "_strptime", "_threading_local", "abc",
    "aifc", "argparse", "ast", "asynchat", "asyncio.base_events", "asyncio.events", "asyncio.futures",
    "asyncio.locks", "asyncio.protocols", "asyncio.queues", "asyncio.runners", "asyncio.selector_events",
    "asyncio.sslproto", "asyncio.staggered", "asyncio.streams", "asyncio.taskgroups", "asyncio.tasks",
    "asyncio.timeouts", "asyncio.transports", "asyncio.unix_events", "asyncio.windows_events", "asyncore", "base64",
    "bdb", "bisect", "bz2", "calendar", "cgi", "cgitb", "chunk", "cmd", "code", "codecs", "codeop", "collections",
    "compileall", "concurrent.futures._base", "concurrent.futures.process", "configparser", "contextlib", "copy",
    "copyreg", "csv", "ctypes", "curses.textpad", "dataclasses", "datetime", "dbm", "dbm.dumb", "difflib", "dis",
    "distutils._msvccompiler", "distutils.archive_util", "distutils.ccompiler", "distutils.cmd",
    "distutils.command.build_ext", "distutils.command.build_py", "distutils.command.config",
    "distutils.command.install", "distutils.command.install_egg_info", "distutils.command.register",
    "distutils.command.sdist", "distutils.core", "distutils.cygwinccompiler", "distutils.dep_util",
    "distutils.dir_util", "distutils.dist", "distutils.errors", "distutils.extension", "distutils.fancy_getopt",
    "distutils.file_util", "distutils.filelist", "distutils.msvc9compiler", "distutils.msvccompiler",
    "distutils.spawn", "distutils.sysconfig", "distutils.text_file", "distutils.util", "distutils.version",
    "distutils.versionpredicate", "doctest", "email._encoded_words", "email._parseaddr", "email._policybase",
    "email.base64mime", "email.charset", "email.errors", "email.feedparser", "email.generator", "email.header",
    "email.headerregistry", "email.message", "email.mime.audio", "email.mime.image", "email.mime.multipart",
    "email.parser", "email.policy", "email.quoprimime", "email.utils", "enum", "filecmp", "fileinput", "fnmatch",
    "fractions", "ftplib", "functools", "genericpath", "getopt", "getpass", "gettext", "glob", "graphlib", "gzip",
    "hashlib", "heapq", "hmac", "html.parser", "http", "http.client", "http.cookiejar", "http.cookies",
    "http.server", "imaplib", "imp", "importlib._abc", "importlib._bootstrap", "importlib._bootstrap_external",
    "importlib.abc", "importlib.metadata", "importlib.metadata._functools", "importlib.resources._adapters",
    "importlib.resources._legacy", "importlib.resources.abc", "importlib.resources.simple", "importlib.util",
    "inspect", "io", "ipaddress", "json", "json.decoder", "json.encoder", "lib2to3.pytree", "lib2to3.refactor",
    "linecache", "locale", "logging", "logging.config", "logging.handlers", "lzma", "mailbox", "mailcap",
    "mimetypes", "modulefinder", "multiprocessing.connection", "multiprocessing.context",
    "multiprocessing.forkserver", "multiprocessing.managers", "multiprocessing.pool", "multiprocessing.process",
    "multiprocessing.shared_memory", "multiprocessing.util", "nntplib", "ntpath", "numbers", "operator", "optparse",
    "os", "pathlib", "pdb", "pickle", "pickletools", "pipes", "pkgutil", "platform", "plistlib", "poplib",
    "posixpath", "pprint", "profile", "pstats", "pty", "py_compile", "pyclbr", "pydoc", "queue", "quopri", "random",
    "re", "rlcompleter", "runpy", "sched", "secrets", "selectors", "shelve", "shutil", "site", "smtpd", "smtplib",
    "sndhdr", "socket", "socketserver", "sqlite3", "ssl", "stat", "statistics", "string", "subprocess", "sunau",
    "symtable", "sysconfig", "tabnanny", "tarfile", "telnetlib", "tempfile", "textwrap", "threading", "timeit",
    "tkinter", "tkinter.colorchooser", "tkinter.dnd", "tkinter.filedialog", "tkinter.font", "tkinter.simpledialog",
    "tkinter.tix", "tkinter.ttk", "tokenize", "trace", "traceback", "tracemalloc", "turtle", "types", "typing",
    "unittest", "unittest.case", "unittest.loader", "unittest.mock", "unittest.result", "unittest.suite",
    "unittest.util", "urllib.error", "urllib.parse", "urllib.request", "urllib.robotparser", "uuid", "venv",
    "warnings", "wave", "weakref", "webbrowser", "wsgiref", "wsgiref.handlers", "wsgiref.headers",
    "wsgiref.simple_server", "wsgiref.util", "wsgiref.validate", "xml.dom", "xml.dom.domreg",
    "xml.dom.expatbuilder", "xml.dom.minidom", "xml.etree.ElementTree", "xml.sax", "xml.sax._exceptions",
    "xml.sax.handler", "xml.sax.saxutils", "xml.sax.xmlreader", "xmlrpc.client", "xmlrpc.server", "zipapp",
    "zipfile", "zipimport",
)


# --- filters ---------------------------------------------------------------------------------------------------

_DOCTEST = re.compile(r"\s*(>>>|\.\.\.)(\s|$)")
_CODE_DIRECTIVE = re.compile(r"\s*\.\.\s+(code-block|code|sourcecode|doctest|testcode|testoutput|testsetup|"
                             r"productionlist|highlight|literalinclude)::")
_SIMPLE_RULE = re.compile(r"\s*=+(\s+=+)+\s*$")  # "=====  =====": a simple table's border
_ALNUM = re.compile(r"[^\W_]")
# A line of Python (or of a grammar): a definition, an import, a decorator, a block keyword ending in ":", an
# assignment, a bare call, a production. Prose rarely starts so ("return the name" has no code after it).
_CODE_LINE = re.compile(
    r"\s*(def |class \w+\s*[(:]|import \w|from [\w.]+ import |@\w|(try|else|finally)\s*:|"
    r"(if|elif|for|while|with|except|async|return|raise|yield|assert)\b.*[()\[\]=].*$|"
    r"[\w.\[\]]+(\s*,\s*[\w.\[\]]+)*\s*[-+*/%&|^]?=[^=]|[\w.]+\(.*\)\s*(#.*)?$|.*::=)")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _mostly_symbols(line: str) -> bool:
    """A non-blank line where fewer than half of the non-space characters are letters or digits."""
    chars = "".join(line.split())
    return bool(chars) and 2 * len(_ALNUM.findall(chars)) < len(chars)


def _code_paragraphs(lines: list[str]) -> list[str]:
    """``lines`` without the paragraphs (runs of non-blank lines) of which more than half the lines are code
    (a signature line above its description stays)."""
    out, i = [], 0
    while i < len(lines):
        end = max(_end_of_paragraph(lines, i), i + 1)
        paragraph = lines[i:end]
        if 2 * sum(bool(_CODE_LINE.match(line)) for line in paragraph) <= len(paragraph):
            out += paragraph
        i = end
    return out


def _end_of_block(lines: Sequence[str], i: int, indent: int) -> int:
    """The index of the first non-blank line at or after ``i`` indented ``indent`` or less (len(lines) if none):
    the end of an indented block (blank lines inside it belong to it)."""
    while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > indent):
        i += 1
    return i


def _end_of_paragraph(lines: Sequence[str], i: int) -> int:
    while i < len(lines) and lines[i].strip():
        i += 1
    return i


def _end_of_simple_table(lines: Sequence[str], i: int) -> int:
    """From a simple table's top border at ``i``: the index after its bottom border (a border followed by a
    blank line or the end of the text), or len(lines)."""
    i += 1
    while i < len(lines):
        if _SIMPLE_RULE.match(lines[i]) and (i + 1 == len(lines) or not lines[i + 1].strip()):
            return i + 1
        i += 1
    return i


def strip_code(text: str) -> str:
    """``text`` (reStructuredText or pydoc's rendering of it) without its code and tables, prose kept:

    - doctest blocks: from a line starting ``>>>`` or ``...`` up to the next blank line (with the output);
    - literal blocks: the block indented under a line ending in ``::`` (the line itself is kept with one
      colon, a lone ``::`` dropped), and ``.. code-block::`` / ``.. sourcecode::`` (and similar) directives;
    - simple tables (from a ``===  ===`` border to the border that closes it), grid table rows (lines
      starting ``|``) and every line of mostly punctuation or symbols (borders, underlines, ``+---+``);
    - paragraphs written in Python without markup: more than half their lines code (``_CODE_LINE``).

    Trailing spaces go and runs of blank lines become one blank line."""
    lines = [line.rstrip() for line in text.split("\n")]
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        if _DOCTEST.match(line):
            i = _end_of_paragraph(lines, i)
        elif _CODE_DIRECTIVE.match(line):
            i = _end_of_block(lines, i + 1, _indent(line))
            out.append("")  # the block took the blank lines after it: keep the paragraphs apart
        elif _SIMPLE_RULE.match(line):
            i = _end_of_simple_table(lines, i)
        elif line.endswith("::"):
            kept = line[:-1] if line[-3:-2] not in (" ", "") else line[:-2].rstrip()  # "Text::" -> "Text:"
            out += [kept, ""] if kept.strip() else [""]
            i = _end_of_block(lines, i + 1, _indent(line))
        else:
            if not line.lstrip().startswith("|") and not _mostly_symbols(line):
                out.append(line)
            i += 1
    return re.sub(r"\n{3,}", "\n\n", "\n".join(_code_paragraphs(out))).strip("\n")


_DEFS = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def module_files() -> dict[str, Path]:
    """Dotted module name -> source file, for every file of :func:`seqlab.data.bundled.pystdlib_files`
    (``email/__init__.py`` is ``email``)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    found = {}
    for path in pystdlib_files():
        parts = path.relative_to(root).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def docstrings(source: bytes | str) -> Iterator[str]:
    """The docstrings of a module's source, cleaned (``ast.get_docstring(clean=True)``), in source order: the
    module's, then every class's, function's and method's (nested ones included) by line."""
    tree = ast.parse(source)
    for node in [tree, *sorted(_definitions(tree), key=lambda n: n.lineno)]:
        doc = ast.get_docstring(node, clean=True)
        if doc:
            yield doc


def _definitions(node: ast.AST) -> Iterator[ast.AST]:
    """The class and function definitions under ``node``, nested ones included: a definition is a statement, so
    only statement lists are searched (body, orelse, finalbody, except and match-case bodies), never the
    expressions that make up most of a module's nodes (what ``ast.walk`` would visit: 3x the time)."""
    for field in ("body", "orelse", "finalbody", "handlers", "cases"):
        for child in getattr(node, field, ()):
            if isinstance(child, _DEFS):
                yield child
            yield from _definitions(child)


def module_document(source: bytes | str) -> str:
    """A module's document: its docstrings filtered by :func:`strip_code`, those shorter than
    :data:`MIN_DOC_CHARS` and repeats of an earlier one dropped, joined by blank lines."""
    kept: dict[str, None] = {}  # insertion-ordered set
    for doc in docstrings(source):
        doc = strip_code(doc)
        if len(doc) >= MIN_DOC_CHARS:
            kept.setdefault(doc)
    return DOC_SEP.join(kept)


def ordered_keys(keys: Iterable[str]) -> list[str]:
    """Document keys in the order of their SHA-1 (hex): a fixed order that interleaves topics and modules, so
    that each contiguous split of the text holds both."""
    return sorted(keys, key=lambda k: hashlib.sha1(k.encode("utf-8")).hexdigest())


@dataclass(frozen=True)
class Prose:
    """A built corpus: the text and its manifest (see :func:`pyprose_manifest`)."""

    text: str
    manifest: dict


def build_prose(modules: Sequence[str] | None = None) -> Prose:
    """The ``pyprose`` corpus built from scratch: the pydocs text and the docstrings of ``modules`` (default
    :data:`PYPROSE_MODULES`) in the layout of the module docstring; a listed module that the running Python
    lacks is recorded as missing."""
    modules = PYPROSE_MODULES if modules is None else tuple(modules)
    files = module_files()
    docs, missing, unreadable = {}, [], []
    for name in modules:
        if name not in files:
            missing.append(name)
            continue
        try:
            docs[f"module:{name}"] = module_document(files[name].read_bytes())
        except (OSError, SyntaxError, ValueError) as e:  # a damaged install: recorded, the rest still builds
            log.warning("pyprose: cannot read the docstrings of %s (%s): left out", name, e)
            unreadable.append(name)
    if missing:
        log.info("pyprose: %d listed modules are not in Python %s: %s", len(missing), platform.python_version(),
                 ", ".join(missing))
    keys = ordered_keys(k for k, v in docs.items() if v)
    topics, docstrings = pydocs_text(), DOC_SEP.join(docs[k] for k in keys)
    text = interleave_splits(topics, docstrings)
    manifest = {
        "name": "pyprose", "python": platform.python_version(), "modules": len(modules), "missing": missing,
        "unreadable": unreadable, "documents": len(keys) + 1, "chars": len(text),
        "pydoc_topics_chars": len(topics), "docstring_chars": len(docstrings),
        "layout": "pydocs and docstrings each cut at the default split, interleaved split by split",
        "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
    }
    return Prose(text, manifest)


def interleave_splits(first: str, second: str, fractions: Sequence[float] = DEFAULT_SPLIT) -> str:
    """``first`` and ``second`` each cut into train / valid / test and joined split by split, so that
    :func:`split_points` of the result cuts exactly between the parts: ``first``'s cuts are its own
    (``split_points(len(first))``), ``second``'s make up the difference."""
    a1, b1 = split_points(len(first), fractions)
    a, b = split_points(len(first) + len(second), fractions)
    a2, b2 = a - a1, b - b1
    return first[:a1] + second[:a2] + first[a1:b1] + second[a2:b2] + first[b1:] + second[b2:]


@functools.cache
def _pyprose() -> Prose:
    return build_prose()


def pyprose_text() -> str:
    """The ``pyprose`` corpus text (built once per process)."""
    return _pyprose().text


def pyprose_manifest() -> dict:
    """What went into :func:`pyprose_text`: ``python`` version, ``modules`` listed, ``missing`` (listed but not
    in this Python), ``unreadable``, ``documents``, ``chars`` (= pydoc_topics_chars + docstring_chars + the
    blank lines between documents), ``pydoc_topics_chars``, ``docstring_chars``, ``sha256`` of the text."""
    return {k: list(v) if isinstance(v, list) else v for k, v in _pyprose().manifest.items()}  # a copy
