"""The import contract (DESIGN.md "Layers"): no module of seqlab imports a module of a higher layer.

Layers, top to bottom (same-layer imports are allowed):

    commands   cli.py, __main__.py, commands/, serve/  the command line and the web inspector
    api        api.py, exporters/                       train / load / export / open_* (what Python users call)
    tasks      tasks/                                   one module per task.kind
    training   trainer.py, checkpoint.py, rundir.py, beam.py, devices.py, optim.py, callbacks.py
    models     models/, decode.py
    blocks     nn/, text/, data/, metrics/, config.py, vectors.py, viz.py, explain.py, presets/
    base       io.py, errors.py, signals.py

Every ``import`` and ``from ... import`` is read from the source (AST, nothing is imported), at module level
and inside functions alike (a lazy import still runs upward when called). ``seqlab/__init__.py`` is the
package root: anything may import ``seqlab`` itself or ``__version__`` from it, but a name it re-exports
lazily (its ``_EXPORTS``) counts as an import of the module that defines it, whether written
``from seqlab import load`` or ``import seqlab`` ... ``seqlab.load``. Dynamic imports
(``importlib.import_module(name)``, the task registry's) are not seen.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import NamedTuple


PACKAGE = Path(__file__).resolve().parents[1] / "seqlab"

LAYERS: list[tuple[str, tuple[str, ...]]] = [  # (layer, the top-level names in seqlab/ it holds), top first
    ("commands", ("cli", "__main__", "commands", "serve")),
    ("api", ("api", "exporters")),
    ("tasks", ("tasks",)),
    ("training", ("trainer", "checkpoint", "rundir", "beam", "devices", "optim", "callbacks")),
    ("models", ("models", "decode")),
    ("blocks", ("nn", "text", "data", "metrics", "config", "vectors", "viz", "explain", "presets")),
    ("base", ("io", "errors", "lazy", "signals")),
]
RANK = {name: rank for rank, (_, names) in enumerate(LAYERS) for name in names}  # 0 = top
LAYER_OF = {name: layer for layer, names in LAYERS for name in names}



class Edge(NamedTuple):
    path: str  # the importing file, relative to the scanned folder's parent (seqlab/config.py)
    line: int
    importer: str  # dotted module name (seqlab.config)
    target: str  # dotted module name it imports (seqlab.tasks)

    def __str__(self) -> str:
        a, b = _top(self.importer), _top(self.target)
        return (f"{self.path}:{self.line} -> {self.target}  ({LAYER_OF[a]} imports {LAYER_OF[b]}, a higher layer)")


def _top(module: str) -> str:
    """seqlab.models.finetune -> models."""
    return module.split(".")[1]


def _module_name(path: Path, package: Path) -> str:
    parts = [package.name, *path.relative_to(package).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _lazy_exports(package: Path) -> dict[str, str]:
    """The root package's ``_EXPORTS`` (name -> defining module), read from its source."""
    init = package / "__init__.py"
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) else None)
        if isinstance(target, ast.Name) and target.id == "_EXPORTS":
            return ast.literal_eval(node.value)
    return {}


def imports(path: Path, package: Path, exports: dict[str, str]) -> list[tuple[int, str]]:
    """(line, imported seqlab module) for every import in the file, function-local ones included."""
    root = package.name
    module = _module_name(path, package)
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    imports_root = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == root and alias.asname is None:
                    imports_root = True  # `import seqlab`: its attributes are checked below
                elif alias.name.startswith(root + "."):
                    found.append((node.lineno, alias.name))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the importing module's package
                anchor = module.split(".")[: len(module.split(".")) - node.level + is_package]
                base = ".".join(anchor + ([base] if base else []))
            if base == root:  # from seqlab import X: a submodule, a lazy export, or __version__
                for alias in node.names:
                    if alias.name in exports:
                        found.append((node.lineno, exports[alias.name]))
                    elif (package / alias.name).is_dir() or (package / f"{alias.name}.py").is_file():
                        found.append((node.lineno, f"{root}.{alias.name}"))
            elif base.startswith(root + "."):
                found.append((node.lineno, base))
    if imports_root:
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == root
                    and node.attr in exports):
                found.append((node.lineno, exports[node.attr]))
    return found


def upward_edges(package: Path = PACKAGE) -> tuple[list[Edge], list[str]]:
    """(imports that go to a higher layer, files under ``package`` that no layer holds)."""
    exports = _lazy_exports(package)
    edges, unplaced = [], []
    for path in sorted(package.rglob("*.py")):
        module = _module_name(path, package)
        if module == package.name:
            continue  # the root: lazy re-exports only, checked where they are used
        if _top(module) not in RANK:
            unplaced.append(str(path.relative_to(package.parent)))
            continue
        for line, target in imports(path, package, exports):
            if target != package.name and _top(target) in RANK and RANK[_top(target)] < RANK[_top(module)]:
                edges.append(Edge(str(path.relative_to(package.parent)), line, module, target))
    return edges, unplaced


def test_no_import_runs_up_a_layer():
    edges, unplaced = upward_edges()
    assert not unplaced, ("files in no layer; add their top-level name to LAYERS in tests/test_layers.py:\n  "
                          + "\n  ".join(unplaced))
    assert not edges, "imports that run up a layer (DESIGN.md \"Layers\"):\n  " + "\n  ".join(map(str, edges))


def test_the_check_catches_a_planted_upward_import(tmp_path):
    """A synthetic seqlab/ tree: a model reaching up into the API (at module level, inside a function, through
    the root's lazy re-export, through ``import seqlab``, relatively), next to allowed imports."""
    package = tmp_path / "seqlab"
    for folder in ("models", "tasks"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text('__version__ = "0"\n_EXPORTS: dict[str, str] = {"load": "seqlab.api", '
                                         '"SeqlabError": "seqlab.errors"}\n')
    (package / "api.py").write_text("from seqlab.tasks import lm\n")
    (package / "errors.py").write_text("")
    (package / "tasks" / "lm.py").write_text("from seqlab.models import bad\nfrom seqlab import __version__\n")
    (package / "models" / "bad.py").write_text(
        "import seqlab\n"
        "from seqlab import SeqlabError, __version__\n"  # allowed: the base layer, the root
        "from seqlab.models import good\n"  # allowed: same layer
        "from seqlab.api import train\n"  # line 4
        "\n"
        "def f():\n"
        "    from seqlab import load\n"  # line 7: a lazy export of seqlab.api
        "    from ..tasks import lm\n"  # line 8: relative
        "    return seqlab.load\n")  # line 9: an attribute of the root
    (package / "models" / "good.py").write_text("from seqlab.errors import SeqlabError\n")
    (package / "stray.py").write_text("")
    edges, unplaced = upward_edges(package)
    assert unplaced == ["seqlab/stray.py"]
    assert sorted((e.path, e.line, e.target) for e in edges) == [
        ("seqlab/models/bad.py", 4, "seqlab.api"),
        ("seqlab/models/bad.py", 7, "seqlab.api"),
        ("seqlab/models/bad.py", 8, "seqlab.tasks"),
        ("seqlab/models/bad.py", 9, "seqlab.api"),
    ]
    assert str(min(edges, key=lambda e: e.line)) == "seqlab/models/bad.py:4 -> seqlab.api  (models imports api, a higher layer)"
