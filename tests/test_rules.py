"""Rules of the code base that stay true (beside the import layers of tests/test_layers.py), read from the source:

- no machine tuning hidden in library state: no ``os.getloadavg``; ``torch.set_num_threads`` and
  ``numba.set_num_threads`` only in the entry points that own the process, and in the library entry that puts
  the caller's counts back (THREAD_OWNERS); everything else takes a thread count as an argument;
- one home per idea: ``os.replace`` / ``os.rename`` (and ``Path.replace`` / ``Path.rename``) only in base/io.py, the
  atomic-replace helper; ``signal.signal(`` only in base/signals.py;
- modules stay small: none over MAX_LINES lines of code and comments (docstrings not counted: the equation and
  departure tags the documentation site is built from live there, beside the code) unless LONG names it with a
  one-line reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "seqlab"
MAX_LINES = 450
# module -> why it may be longer (a module here must still be over the limit: the test says when it is not)
LONG: dict[str, str] = {}
# the modules that own the process and so may set the thread counts (path relative to seqlab/)
THREAD_OWNERS = {
    "training/trainer.py": "the Trainer's setup: train.threads for the run",
    "cli.py": "the command line: --threads of the verbs that take it",
    "data/workers.py": "the data-preparation worker initialiser (it owns its worker process; sets none today)",
    "api.py": "puts the caller's thread counts back after a library call (train_run, load): sets none of its own",
}
RENAMES = {"base/io.py"}
SIGNALS = {"base/signals.py"}


def sources() -> dict[str, ast.Module]:
    return {str(p.relative_to(PACKAGE)): ast.parse(p.read_text(encoding="utf-8")) for p in sorted(PACKAGE.rglob("*.py"))}


def calls(tree: ast.Module, attribute: str) -> list[tuple[int, str]]:
    """(line, dotted callee) of every call whose callee ends in ``.attribute``, e.g. ``torch.set_num_threads``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == attribute:
            found.append((node.lineno, ast.unparse(node.func)))
    return found


def offenders(attribute: str, allowed: set[str] | dict, owner: tuple[str, ...] = ()) -> list[str]:
    """``path:line callee`` of the calls of ``.attribute`` outside the allowed modules (on owner objects when
    ``owner`` names them, e.g. ("os",); every object otherwise)."""
    out = []
    for path, tree in sources().items():
        if path in allowed:
            continue
        for line, callee in calls(tree, attribute):
            if not owner or callee.rsplit(".", 1)[0] in owner:
                out.append(f"{path}:{line} {callee}")
    return out


def test_no_load_average_reads():
    assert offenders("getloadavg", set()) == []


def test_thread_counts_are_set_only_by_the_process_owners():
    assert offenders("set_num_threads", THREAD_OWNERS) == []
    assert all((PACKAGE / path).exists() for path in THREAD_OWNERS), "an owner named here no longer exists"


def test_renames_go_through_io():
    assert offenders("replace", RENAMES, owner=("os",)) == []
    assert offenders("rename", RENAMES, owner=("os",)) == []
    # Path.replace / Path.rename: a call with one argument on anything but a str (str.replace takes two)
    out = []
    for path, tree in sources().items():
        if path in RENAMES:
            continue
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("replace", "rename") and len(node.args) == 1 and not node.keywords
                    and not isinstance(node.func.value, ast.Constant)):
                out.append(f"{path}:{node.lineno} {ast.unparse(node.func)}")
    assert out == []


def test_signal_handlers_are_installed_in_one_module():
    assert offenders("signal", SIGNALS, owner=("signal",)) == []


def code_lines(source: str) -> int:
    """The lines of ``source`` outside its docstrings (module, class and function)."""
    docstrings = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                docstrings.update(range(first.lineno, first.end_lineno + 1))
    return len(source.splitlines()) - len(docstrings)


def test_code_lines_leave_out_docstrings_only():
    source = 'def f():\n    """One\n    two."""\n    x = """not a docstring\n    """\n    return x\n'
    assert code_lines(source) == 4


def test_modules_stay_small():
    lengths = {str(p.relative_to(PACKAGE)): code_lines(p.read_text(encoding="utf-8")) for p in PACKAGE.rglob("*.py")}
    assert {path: n for path, n in lengths.items() if n > MAX_LINES and path not in LONG} == {}
    assert [path for path in LONG if lengths.get(path, 0) <= MAX_LINES] == [], "LONG names a module that is short"
