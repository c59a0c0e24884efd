"""seqlab ships ``py.typed``: its public API type-checks (mypy with pyproject.toml's ``[tool.mypy]``), a notebook
user's script against it type-checks (tests/typing_usage.py), and misuse is caught (the API is not ``Any``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def mypy(*args: str) -> subprocess.CompletedProcess:
    """``python -m mypy ARGS`` from the repository root (so it reads pyproject.toml), its output captured."""
    return subprocess.run([sys.executable, "-m", "mypy", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def test_the_package_ships_py_typed():
    assert (ROOT / "seqlab" / "py.typed").is_file()
    assert '"py.typed"' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")


@pytest.mark.heavy
def test_the_public_api_type_checks():
    out = mypy()  # the files of [tool.mypy]: seqlab/api.py, seqlab/training/callbacks.py, seqlab/tasks/
    assert out.returncode == 0, f"mypy found problems:\n{out.stdout}{out.stderr}"


def test_a_notebook_script_type_checks_and_misuse_is_caught(tmp_path):
    out = mypy("--follow-imports=silent", "tests/typing_usage.py")
    assert out.returncode == 0, f"mypy found problems in tests/typing_usage.py:\n{out.stdout}{out.stderr}"
    misuse = tmp_path / "misuse.py"
    misuse.write_text('import seqlab\n\nlm = seqlab.train("lm-char", train_data="text")\n'
                      'lm.generate("The ")  # a Trained: narrow it first\n'
                      'assert isinstance(lm, seqlab.LanguageModel)\n'
                      'count: int = lm.generate("The ")  # a str\n', encoding="utf-8")
    out = mypy("--follow-imports=silent", str(misuse))
    assert out.returncode == 1, f"mypy accepted misuse of the API:\n{out.stdout}{out.stderr}"
    assert '"Trained" has no attribute "generate"' in out.stdout, out.stdout
    assert 'expression has type "str", variable has type "int"' in out.stdout, out.stdout


def test_the_type_checkers_names_are_the_lazy_exports():
    """seqlab/__init__.py lists its public names twice: ``_EXPORTS`` (name -> defining module, read at run time) and
    the ``TYPE_CHECKING`` imports type checkers read (they cannot follow ``_EXPORTS``); the two must agree."""
    import ast

    tree = ast.parse((ROOT / "seqlab" / "__init__.py").read_text(encoding="utf-8"))
    exports = next(ast.literal_eval(node.value) for node in tree.body
                   if isinstance(node, ast.AnnAssign) and ast.unparse(node.target) == "_EXPORTS")
    block = next(node for node in tree.body if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test))
    checked = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom), ast.unparse(node)
        for alias in node.names:
            assert alias.asname == alias.name, f"{alias.name} as {alias.asname}: re-export it under its own name"
            checked[alias.name] = node.module
    assert checked == exports
