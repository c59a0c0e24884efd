"""The import contract of docs/architecture.md: the folders of seqlab/ are its layers; no module imports a layer
its row of the layer table does not allow, and no modules import each other in a cycle.

The layers come from the table in docs/architecture.md (``| layer | folders | may import | why |``): a module's
layer is the layer of its top-level folder (or top-level module) in ``seqlab/``. Every ``import`` and
``from ... import`` is read from the source (AST, nothing is imported), at module level and inside functions
alike (a lazy import still runs when called). ``from seqlab.x import y`` is an import of the module
``seqlab.x.y`` when that is a module, of the module a package re-exports ``y`` from lazily (its ``_EXPORTS``),
else of ``seqlab.x``. ``seqlab/__init__.py`` is the package root: anything may import ``seqlab`` itself, but a
name it re-exports lazily counts as an import of the module that defines it, whether written ``from seqlab
import load`` or ``import seqlab`` ... ``seqlab.load``. A former path refused with a pointer (a module whose
body raises ImportError: ``seqlab/devices.py``) belongs to no layer, and an import of it counts as an import of
a module that does not exist. Dynamic imports (``importlib.import_module(name)``, the task registry's) are not
seen.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "seqlab"
ARCHITECTURE = ROOT / "docs" / "architecture.md"


class Layers(NamedTuple):
    order: list[str]  # layer names, top first
    of: dict[str, str]  # top-level name in seqlab/ (a folder or a module, without .py) -> its layer
    may_import: dict[str, set[str]]  # layer -> the other layers it may import
    arrows: list[tuple[str, str]]  # the diagram's arrows (layer -> layer)


def read_layers(text: str) -> Layers:
    """The layer table and the diagram of docs/architecture.md's markdown."""
    order, of, may = [], {}, {}
    header = False
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if cells[:3] == ["layer", "folders", "may import"]:
            header = True
        elif header and cells and set(cells[0]) <= {"-", " "}:
            continue  # the separator row
        elif header and cells:
            layer = cells[0].strip("`")
            order.append(layer)
            for name in re.findall(r"`([^`]+)`", cells[1]):
                of[name.removesuffix("/").removesuffix(".py")] = layer
            may[layer] = set(re.findall(r"`([^`]+)`", cells[2]))
        elif header:
            break  # the table ended
    diagram = re.search(r"```mermaid\n(.*?)```", text, re.S)
    arrows = re.findall(r"(\w+)(?:\[[^\]]*\])?\s*-->\s*(\w+)", diagram.group(1)) if diagram else []
    return Layers(order, of, may, arrows)


LAYERS = read_layers(ARCHITECTURE.read_text(encoding="utf-8"))


def read_tiers(text: str) -> list[list[str]]:
    """The folders of each tier of docs/architecture.md's "Inside `blocks`" table, top tier first."""
    tiers: list[list[str]] = []
    header = False
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if cells[:2] == ["blocks tier", "folders"]:
            header = True
        elif header and cells and set(cells[0]) <= {"-", " "}:
            continue
        elif header and cells:
            tiers.append([name.removesuffix("/") for name in re.findall(r"`([^`]+)`", cells[1])])
        elif header:
            break
    return tiers


TIERS = read_tiers(ARCHITECTURE.read_text(encoding="utf-8"))


class Edge(NamedTuple):
    path: str  # the importing file, relative to the scanned folder's parent (seqlab/base/config.py)
    line: int
    importer: str  # dotted module name (seqlab.base.config)
    target: str  # dotted module name it imports (seqlab.tasks)
    layers: tuple[str, str] = ("", "")  # (importer's layer, target's layer)

    def __str__(self) -> str:
        a, b = self.layers
        return f"{self.path}:{self.line} -> {self.target}  ({a} imports {b}, which its row does not allow)"


def _top(module: str) -> str:
    """seqlab.models.pretrained_heads -> models."""
    return module.split(".")[1]


def _module_name(path: Path, package: Path) -> str:
    parts = [package.name, *path.relative_to(package).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _literal(init: Path, name: str) -> dict[str, str]:
    """The dict literal assigned to ``name`` at the top of ``init`` (a package's ``_EXPORTS``), or {}."""
    if not init.is_file():
        return {}
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) else None)
        if isinstance(target, ast.Name) and target.id == name and node.value is not None:
            return ast.literal_eval(node.value)
    return {}


def refuses(path: Path) -> bool:
    """Whether the module at ``path`` is a former path refused with a pointer: its body raises ImportError."""
    return any(isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and isinstance(node.exc.func, ast.Name)
               and node.exc.func.id in ("ImportError", "ModuleNotFoundError")
               for node in ast.parse(path.read_text(encoding="utf-8")).body)


class Package:
    """The modules under ``root`` (a folder named like the package) and how names resolve to them."""

    def __init__(self, root: Path):
        self.root = root
        files = {_module_name(p, root): p for p in sorted(root.rglob("*.py"))}
        self.files = {name: path for name, path in files.items() if not refuses(path)}
        self.refused = sorted(set(files) - set(self.files))  # former paths: they import nothing, and nothing them

    def exports(self, package: str) -> dict[str, str]:
        """A package's lazy re-exports (name -> defining module)."""
        path = self.files.get(package)
        return _literal(path, "_EXPORTS") if path is not None and path.name == "__init__.py" else {}

    def resolve(self, base: str, name: str | None) -> str:
        """The module that ``from base import name`` (or ``import base`` when name is None) imports."""
        if name is None:
            return base
        child = f"{base}.{name}"
        if child in self.files or child in self.refused:
            return child
        return self.exports(base).get(name, base)

    def imports(self, path: Path) -> list[tuple[int, str]]:
        """(line, imported module of the package) for every import in the file, function-local ones included."""
        root = self.root.name
        module = _module_name(path, self.root)
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
                        found.append((node.lineno, self.resolve(alias.name, None)))
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the importing module's package
                    anchor = module.split(".")[: len(module.split(".")) - node.level + is_package]
                    base = ".".join(anchor + ([base] if base else []))
                if base == root or base.startswith(root + "."):
                    found += [(node.lineno, self.resolve(base, alias.name)) for alias in node.names]
        if imports_root:
            exports = self.exports(root)
            for node in ast.walk(tree):
                if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == root
                        and node.attr in exports):
                    found.append((node.lineno, exports[node.attr]))
        return [(line, target) for line, target in found if target != root]


def check(package: Path = PACKAGE, layers: Layers = LAYERS) -> tuple[list[Edge], list[str], list[list[str]]]:
    """(imports the table does not allow, files under ``package`` that no layer holds, import cycles)."""
    pkg = Package(package)
    edges, unplaced = [], []
    graph: dict[str, set[str]] = {}
    for module, path in pkg.files.items():
        if module == package.name:
            continue  # the root: lazy re-exports only, checked where they are used
        graph[module] = set()
        layer = layers.of.get(_top(module))
        if layer is None:
            unplaced.append(str(path.relative_to(package.parent)))
            continue
        for line, target in pkg.imports(path):
            graph[module].add(target)
            other = layers.of.get(_top(target))
            if other is not None and other != layer and other not in layers.may_import[layer]:
                edges.append(Edge(str(path.relative_to(package.parent)), line, module, target, (layer, other)))
    return edges, unplaced, cycles(graph)



def check_tiers(package: Path = PACKAGE, tiers: list[list[str]] = TIERS) -> list[str]:
    """``path:line -> module`` of the imports between two folders of the blocks tiers that the order does not
    allow: a folder imports the folders of the tiers below its own, not its own tier's other folders nor above."""
    rank = {folder: i for i, tier in enumerate(tiers) for folder in tier}
    pkg = Package(package)
    found = []
    for module, path in pkg.files.items():
        if module == package.name or _top(module) not in rank:
            continue
        for line, target in pkg.imports(path):
            if target == package.name or _top(target) not in rank or _top(target) == _top(module):
                continue
            if rank[_top(target)] <= rank[_top(module)]:
                found.append(f"{path.relative_to(package.parent)}:{line} -> {target}")
    return found

def missing(package: Path = PACKAGE) -> list[str]:
    """``path:line -> module`` of the imports of a seqlab module that does not exist (a path from before a move,
    docs/architecture.md "Moved paths")."""
    pkg = Package(package)
    return [f"{path.relative_to(package.parent)}:{line} -> {target}" for path in pkg.files.values()
            for line, target in pkg.imports(path) if target not in pkg.files]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of ``graph`` with more than one node or a self-loop, each sorted
    (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph.get(node, ()):
                    found.append(sorted(component))
    return sorted(found)


def test_the_table_names_every_folder_once_and_orders_the_layers():
    tops = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
            if (p.suffix == ".py" or (p / "__init__.py").is_file())}
    assert sorted(set(LAYERS.of) - tops) == [], "the table names folders that are not in seqlab/"
    assert LAYERS.order[-1] == "base" and len(LAYERS.order) == len(set(LAYERS.order))
    for rank, layer in enumerate(LAYERS.order):  # only layers below: the table is an order, top first
        assert LAYERS.may_import[layer] <= set(LAYERS.order[rank + 1:]), layer
    assert "tasks" not in LAYERS.may_import["serve"], "serve reads runs through the task objects' public verbs"


def test_the_diagram_draws_every_layer_and_only_allowed_arrows():
    drawn = {name for arrow in LAYERS.arrows for name in arrow}
    assert drawn == set(LAYERS.order)
    assert [(a, b) for a, b in LAYERS.arrows if b not in LAYERS.may_import[a]] == []


def test_no_import_runs_up_a_layer_and_none_goes_round():
    edges, unplaced, loops = check()
    assert not unplaced, ("files in no layer; add their folder to the layer table of docs/architecture.md:\n  "
                          + "\n  ".join(unplaced))
    assert not edges, ("imports the layer table of docs/architecture.md does not allow:\n  "
                       + "\n  ".join(map(str, edges)))
    assert not loops, "modules that import each other:\n  " + "\n  ".join(" <-> ".join(c) for c in loops)


def test_every_import_names_a_module_that_exists():
    assert missing() == []


PLANTED_TABLE = """
| layer | folders | may import | why |
| --- | --- | --- | --- |
| `serve` | `serve/` | `api`, `models`, `base` | |
| `api` | `api.py` | `tasks`, `models`, `base` | |
| `tasks` | `tasks/` | `models`, `base` | |
| `models` | `models/` | `base` | |
| `base` | `base/` | | |

```mermaid
flowchart TD
    serve["serve"] --> api
    api --> tasks
    tasks --> models
    models --> base
```
"""


def _planted(tmp_path: Path) -> Path:
    """A synthetic seqlab/ tree: a model reaching up into the API (at module level, inside a function, through the
    root's lazy re-export, through ``import seqlab``, relatively), the web inspector reaching into a task, two
    modules importing each other (one inside a function) and one through a package's lazy re-export, beside
    allowed imports."""
    package = tmp_path / "seqlab"
    for folder in ("models", "tasks", "serve", "base"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text('_EXPORTS: dict[str, str] = {"load": "seqlab.api", '
                                         '"SeqlabError": "seqlab.base.errors"}\n')
    (package / "errors.py").write_text('"""Moved."""\n\nraise ImportError("seqlab.errors is now seqlab.base.errors")\n')
    (package / "api.py").write_text("from seqlab.tasks import lm\n")
    (package / "base" / "errors.py").write_text("")
    (package / "tasks" / "lm.py").write_text("from seqlab.models import bad\nfrom seqlab import __version__\n")
    (package / "models" / "bad.py").write_text(
        "import seqlab\n"
        "from seqlab import SeqlabError\n"  # allowed: the base layer
        "from seqlab.models import good\n"  # allowed: same layer
        "from seqlab.api import train\n"  # line 4
        "\n"
        "def f():\n"
        "    from seqlab import load\n"  # line 7: a lazy export of seqlab.api
        "    from ..tasks import lm\n"  # line 8: relative
        "    return seqlab.load\n")  # line 9: an attribute of the root
    (package / "models" / "good.py").write_text("import seqlab.base.errors\n\ndef g():\n    from . import bad\n")
    (package / "models" / "__init__.py").write_text('_EXPORTS = {"helper": "seqlab.models.loop"}\n')
    (package / "models" / "loop.py").write_text("from seqlab.models.own import x\n")
    (package / "models" / "own.py").write_text("from seqlab.models import helper\n")
    (package / "serve" / "ops.py").write_text("from seqlab.api import load\nfrom seqlab.tasks.lm import spans\n")
    (package / "stray.py").write_text("")
    return package


def test_the_check_catches_planted_upward_imports_and_cycles(tmp_path):
    package = _planted(tmp_path)
    layers = read_layers(PLANTED_TABLE)
    assert layers.order == ["serve", "api", "tasks", "models", "base"]
    assert layers.of == {"serve": "serve", "api": "api", "tasks": "tasks", "models": "models", "base": "base"}
    assert layers.may_import["serve"] == {"api", "models", "base"} and layers.may_import["base"] == set()
    assert ("tasks", "models") in layers.arrows and ("models", "base") in layers.arrows
    edges, unplaced, loops = check(package, layers)
    assert unplaced == ["seqlab/stray.py"]
    assert sorted((e.path, e.line, e.target) for e in edges) == [
        ("seqlab/models/bad.py", 4, "seqlab.api"),
        ("seqlab/models/bad.py", 7, "seqlab.api"),
        ("seqlab/models/bad.py", 8, "seqlab.tasks.lm"),
        ("seqlab/models/bad.py", 9, "seqlab.api"),
        ("seqlab/serve/ops.py", 2, "seqlab.tasks.lm"),  # lower, but not in serve's row
    ]
    assert str(next(e for e in edges if e.line == 4)) == (
        "seqlab/models/bad.py:4 -> seqlab.api  (models imports api, which its row does not allow)")
    assert loops == [
        # bad -> api -> tasks.lm -> bad (the upward imports), bad -> good -> bad (good's inside a function)
        ["seqlab.api", "seqlab.models.bad", "seqlab.models.good", "seqlab.tasks.lm"],
        ["seqlab.models.loop", "seqlab.models.own"],  # through the package's lazy re-export
    ]
    (package / "models" / "stale.py").write_text("def f():\n    from seqlab import errors\n")  # moved: refused
    (package / "models" / "gone.py").write_text("from seqlab.io import read_json\n")  # moved: no module left
    assert missing(package) == ["seqlab/models/gone.py:1 -> seqlab.io", "seqlab/models/stale.py:2 -> seqlab.errors"]
    good = Package(package).imports(package / "models" / "good.py")
    assert good == [(1, "seqlab.base.errors"), (4, "seqlab.models.bad")]  # a relative submodule


def test_a_planted_diagram_arrow_the_table_does_not_allow_is_seen():
    layers = read_layers(PLANTED_TABLE.replace("tasks --> models", "tasks --> serve"))
    assert [(a, b) for a, b in layers.arrows if b not in layers.may_import[a]] == [("tasks", "serve")]


def test_the_former_devices_path_is_refused_with_a_pointer_to_the_moved_module():
    """docs/architecture.md, "Moved paths": ``seqlab.devices`` is refused, naming ``seqlab.training.devices``."""
    import sys

    import seqlab.training.devices

    for statement in ("import seqlab.devices", "from seqlab.devices import inference_device"):
        with pytest.raises(ImportError, match=r"^seqlab\.devices has moved to seqlab\.training\.devices; "):
            exec(statement, {})
    assert "seqlab.devices" not in sys.modules and seqlab.training.devices.inference_device
    assert Package(PACKAGE).refused == ["seqlab.devices"]


def test_the_blocks_keep_their_inner_order():
    """docs/architecture.md, "Inside `blocks`": the tiers hold exactly the blocks layer's folders, and no import
    between two of them runs up a tier or across one."""
    assert sorted(f for tier in TIERS for f in tier) == sorted(f for f, layer in LAYERS.of.items() if layer == "blocks")
    assert TIERS == [["vectors", "metrics"], ["data", "views"], ["nn", "text"]]
    assert check_tiers() == []


def test_a_planted_import_against_the_blocks_order_is_seen(tmp_path):
    package = tmp_path / "seqlab"
    for folder in ("vectors", "data", "nn", "text"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "vectors" / "keyed.py").write_text("from seqlab.data import corpus\nfrom seqlab.text import vocab\n")
    (package / "data" / "corpus.py").write_text("from seqlab.nn import masks\n\ndef f():\n    from seqlab.vectors import keyed\n")
    (package / "nn" / "masks.py").write_text("from seqlab.nn import other\n")  # its own folder
    (package / "nn" / "other.py").write_text("")
    (package / "text" / "vocab.py").write_text("from seqlab.nn.masks import x\n")  # across its own tier
    tiers = read_tiers("| blocks tier | folders | why |\n| --- | --- | --- |\n| `a` | `vectors/` | |\n"
                       "| `b` | `data/` | |\n| `c` | `nn/`, `text/` | |\n")
    assert tiers == [["vectors"], ["data"], ["nn", "text"]]
    assert check_tiers(package, tiers) == ["seqlab/data/corpus.py:4 -> seqlab.vectors.keyed",
                                           "seqlab/text/vocab.py:1 -> seqlab.nn.masks"]
