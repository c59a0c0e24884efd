"""Rules of the code base that stay true (beside the import layers of tests/test_layers.py), read from the source:

- no machine tuning hidden in library state: no ``os.getloadavg``; ``torch.set_num_threads`` and
  ``numba.set_num_threads`` only in the entry points that own the process, and in the library entry that puts
  the caller's counts back (THREAD_OWNERS); everything else takes a thread count as an argument;
- one home per idea: ``os.replace`` / ``os.rename`` (and ``Path.replace`` / ``Path.rename``) only in base/io.py, the
  atomic-replace helper; ``signal.signal(`` only in base/signals.py;
- no import-system tricks (STYLE.md anti-pattern 7): no ``sys.meta_path`` or ``sys.path_hooks``, no module that
  swaps its own ``__class__``, and no module-level ``def __getattr__``: a lazy name comes from
  ``seqlab.base.lazy.lazy_exports``, the one lazy-loading mechanism;
- modules stay small: none over MAX_LINES lines of code and comments (docstrings not counted: the equation and
  departure tags the documentation site is built from live there, beside the code) unless LONG names it with a
  one-line reason;
- one return type per method in nn/ and models/: no return annotation ``Tensor | X`` with X other than None (a
  method that also returns attention weights is another method, ``forward_with_weights``), unless TENSOR_UNIONS
  names it with a reason;
- functions stay short where routes grow: none in serve/ over MAX_FUNCTION_LINES lines (``def`` to its last line,
  nested functions included in the one that holds them).
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
    "cli.py": "the command line: --threads of the verbs that take it",
    "data/workers.py": "the data-preparation worker initialiser (it owns its worker process; sets none today)",
    "api.py": "the library's entry (train_run): train.threads for the run, the caller's counts put back after",
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


def import_tricks(path: str, tree: ast.Module) -> list[str]:
    """``path:line what`` of every import-system trick in a module's source (module docstring)."""
    found = [f"{path}:{node.lineno} def __getattr__" for node in tree.body
             if isinstance(node, ast.FunctionDef) and node.name == "__getattr__"]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("meta_path", "path_hooks"):
            found.append(f"{path}:{node.lineno} {ast.unparse(node)}")
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found += [f"{path}:{node.lineno} {ast.unparse(t)} =" for t in targets
                      if isinstance(t, ast.Attribute) and t.attr == "__class__"]
    return sorted(found, key=lambda where: int(where.split(":")[1].split()[0]))


def test_no_import_system_tricks():
    planted = ast.parse("import sys\nsys.meta_path.insert(0, None)\nsys.modules[__name__].__class__ = type\n"
                        "def __getattr__(name):\n    pass\ndef f():\n    def __getattr__(name):\n        pass\n")
    assert import_tricks("x.py", planted) == ["x.py:2 sys.meta_path", "x.py:3 sys.modules[__name__].__class__ =",
                                              "x.py:4 def __getattr__"]
    assert [trick for path, tree in sources().items() for trick in import_tricks(path, tree)] == []


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


# ---- one return type per method ---------------------------------------------------------------------------

TYPED = ("nn/", "models/")  # the folders whose methods return one type
# "path:Class.method" -> why its return type may be a Tensor or something else
TENSOR_UNIONS = {
    "models/seq2seq.py:DecoderState.rnn_state": "the hx torch.nn.GRU (h) or torch.nn.LSTM ((h, c)) takes: the "
                                                 "cell's type, not a flag",
}


def _members(annotation: ast.expr) -> list[ast.expr]:
    """The members of a union annotation (``A | B | C`` or ``Union[A, B]``; ``Optional[A]`` is A | None)."""
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _members(annotation.left) + _members(annotation.right)
    if isinstance(annotation, ast.Subscript) and ast.unparse(annotation.value).split(".")[-1] in ("Union", "Optional"):
        inner = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
        none = [ast.Constant(None)] if ast.unparse(annotation.value).endswith("Optional") else []
        return [m for e in inner for m in _members(e)] + none
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):  # a quoted annotation
        return _members(ast.parse(annotation.value, mode="eval").body)
    return [annotation]


def tensor_unions(tree: ast.Module) -> list[tuple[str, int, str]]:
    """(Class.method or function, line, annotation) of each return annotation ``Tensor | X`` with X not None."""
    found = []

    def visit(node: ast.AST, owner: str) -> None:
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            name = f"{owner}.{child.name}" if owner else child.name
            if not isinstance(child, ast.ClassDef) and child.returns is not None:
                members = [ast.unparse(m).split(".")[-1] for m in _members(child.returns)]  # torch.Tensor: Tensor
                if "Tensor" in members and any(m not in ("Tensor", "None") for m in members):
                    found.append((name, child.lineno, ast.unparse(child.returns)))
            visit(child, name)

    visit(tree, "")
    return found


def test_tensor_unions_are_found():
    planted = ast.parse("class M:\n"
                        "    def forward(self, x, need_weights=False) -> Tensor | Attended: ...\n"
                        "    def maybe(self) -> Tensor | None: ...\n"
                        "    def old(self) -> 'Optional[torch.Tensor]': ...\n"
                        "    def union(self) -> Union[torch.Tensor, tuple[Tensor, Tensor]]: ...\n"
                        "def f() -> None | Tensor | list[Tensor]: ...\n")
    assert [(name, line) for name, line, _ in tensor_unions(planted)] == [("M.forward", 2), ("M.union", 5), ("f", 6)]


def test_methods_in_nn_and_models_return_one_type():
    found = {f"{path}:{name}": f"line {line}: -> {annotation}" for path, tree in sources().items()
             if path.startswith(TYPED) for name, line, annotation in tensor_unions(tree)}
    assert {key: where for key, where in found.items() if key not in TENSOR_UNIONS} == {}
    assert [key for key in TENSOR_UNIONS if key not in found] == [], "TENSOR_UNIONS names a method that is fine now"


# ---- short functions in serve/ ----------------------------------------------------------------------------

SHORT = ("serve/",)  # the folders whose functions stay under MAX_FUNCTION_LINES
MAX_FUNCTION_LINES = 60


def long_functions(tree: ast.Module, limit: int) -> list[tuple[str, int]]:
    """(name, lines) of each function (at any depth) longer than ``limit`` lines, ``def`` to its last line."""
    return [(node.name, node.end_lineno - node.lineno + 1) for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > limit]


def test_long_functions_are_found():
    body = "".join(f"    x{i} = {i}\n" for i in range(4))
    inner = body.replace("    ", "        ")
    planted = ast.parse(f"def short():\n{body}def long():\n{body}    async def inner():\n{inner}")
    assert long_functions(planted, 5) == [("long", 10)]
    assert long_functions(planted, 4) == [("short", 5), ("long", 10), ("inner", 5)]


def test_functions_in_serve_stay_short():
    found = {f"{path}:{name}": n for path, tree in sources().items() if path.startswith(SHORT)
             for name, n in long_functions(tree, MAX_FUNCTION_LINES)}
    assert found == {}
