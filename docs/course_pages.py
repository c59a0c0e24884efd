"""The course on the site (docs/hooks.py): each tutorial's exercises at its end, and the index page of all of them.

An exercise shows its statement, the code to start from, the ``check`` call, and the solution (from
docs/course/solutions/, the file the suite checks) in a collapsed block with what ``check`` prints for it: the
build runs that check, so a solution that stops passing fails the build. Nothing here is typed twice: the
statements, signatures and sections come from :mod:`seqlab.course`.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

DOCS = Path(__file__).resolve().parent
SOLUTIONS = DOCS / "course" / "solutions"
NOT_CHECKED = "(not checked in this build: the notebook's run in the test suite checks it)"


def solutions_file(chapter: str) -> Path:
    """docs/course/solutions/chNN_*.py: the file of chapter ``chapter``'s solutions and planted answers."""
    path = next(SOLUTIONS.glob(f"ch{chapter}_*.py"), None)
    if path is None:
        raise LookupError(f"no solutions for chapter {chapter} in {SOLUTIONS}")
    return path


def solution_source(path: Path, name: str) -> str:
    """The source of the top-level function ``name`` in the solutions file ``path``, with what it needs of the
    file: its imports, and the module-level helpers and constants it uses (transitively, in file order); never the
    planted wrong answers (``PLANTED`` and the functions only it uses)."""
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    imports = [ast.get_source_segment(text, node) for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    defined: dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defined.update({t.id: node for t in targets if isinstance(t, ast.Name)})
    if not isinstance(defined.get(name), ast.FunctionDef):
        raise LookupError(f"{path.name} defines no {name}")
    needed: list[ast.stmt] = []
    pending = [defined[name]]
    while pending:  # the definitions the function's body names, and theirs
        node = pending.pop()
        if node in needed:
            continue
        needed.append(node)
        used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        pending += [defined[u] for u in sorted(used) if u in defined and u != "PLANTED"]
    lines = text.splitlines()
    blocks = []
    for node in sorted(needed, key=lambda n: n.lineno):  # whole lines: a trailing comment stays
        start = node.lineno - 1 - len(getattr(node, "decorator_list", []))
        blocks.append("\n".join(lines[start:node.end_lineno]))
    return "\n".join([*filter(None, imports), "", "", "\n\n\n".join(blocks)]).strip() + "\n"


def anchor(exercise) -> str:
    return "exercise-" + exercise.id.replace(".", "-")


def exercises_markdown(chapter: str, run: bool = True) -> str:
    """The "Exercises" section of a tutorial: every exercise of ``chapter``. ``run=False`` (a build that leaves the
    page's code to its notebook's run, ``SEQLAB_DOCS_SKIP_NOTEBOOKS``) shows each solution without running its
    check: tests/test_notebooks.py runs the same solutions' checks in the kernel."""
    from seqlab import course

    if not course.exercises(chapter):
        return ""
    path = solutions_file(chapter)
    out = ["## Exercises", "",
           f"Write each function yourself, then run the `check` under it: it calls your function on inputs at "
           f"several sizes and compares it with seqlab's own implementation, which the tests verify against the "
           f"reference libraries. A wrong answer gets the first case that differs and, when it is a usual "
           f"mistake, its name and the notes' equation. From a shell: `seqlab course check ID FILE.py`. "
           f"[All the exercises](../course.md).", ""]
    for exercise in course.exercises(chapter):
        source = solution_source(path, exercise.name)
        result = _checked(exercise, source, path.name) if run else NOT_CHECKED
        out += [f"### {exercise.id} {exercise.title} {{#{anchor(exercise)}}}", "",
                f"*The notes: {exercise.section}.*" + (f" {exercise.follows}" if exercise.follows else ""), "",
                exercise.statement.strip(), "",
                "```python", exercise.starter().rstrip(), "", "", "from seqlab import course",
                f"course.check({exercise.id!r}, {exercise.name})", "```", "",
                '??? success "Solution"', "",
                textwrap.indent("```python\n" + source + "```", "    "), "",
                textwrap.indent(f"```text\n{result}\n```", "    "), ""]
    return "\n".join(out) + "\n"


def _checked(exercise, source: str, where: str):
    """What ``check`` says of the solution ``source`` run alone, as the page shows it; an error if it fails."""
    from seqlab import course

    namespace: dict = {}
    exec(compile(source, f"{where}: {exercise.name}", "exec"), namespace)  # what the page shows, alone
    result = course.check(exercise.id, namespace[exercise.name])
    if not result.passed:
        raise AssertionError(f"the site's solution of {exercise.id} does not pass: {result}")
    return result


def course_index_markdown() -> str:
    """course.md: every exercise by chapter, with the notes' section and the mistakes it names."""
    from seqlab import course

    out = ["# The course: exercises", "",
           f"{len(course.exercises())} exercises over the seven chapters, from one equation by hand to a small "
           "model. Each one asks for a function, checks it against seqlab's own implementation of the same "
           "equation on random inputs at several sizes that all differ (with a tolerance taken from a rounding-"
           "error bound, so a correct float32 or float64 answer passes whatever its summation order), and "
           "recognises the usual wrong answers by name. Each tutorial ends with its chapter's exercises, their "
           "starter code and, collapsed, a solution.", "",
           "```python",
           "from seqlab import course",
           "course.exercises(\"06\")                                  # what to write: id, signature, section",
           "course.check(\"06.1\", scaled_dot_product_attention)      # passed, or the first failing case",
           "```", "",
           "From a shell, on a file that defines the function: `seqlab course check 06.1 my_attention.py` "
           "(exit 0: passed, 1: a wrong answer, 2: bad input). The manual's [course section](manual.md#the-course) "
           "says how a teacher uses it.", ""]
    for chapter, (title, page, _) in course.CHAPTERS.items():
        out += [f"## {chapter}. {title}", "", "| exercise | write | the notes | mistakes it names |",
                "| --- | --- | --- | --- |"]
        for exercise in course.exercises(chapter):
            mistakes = ", ".join(f"`{m.name}`" for m in exercise.mistakes)
            out.append(f"| [{exercise.id} {exercise.title}](tutorials/{page}.md#{anchor(exercise)}) | "
                       f"`{exercise.signature}` | {exercise.section} | {mistakes} |")
        out.append("")
    return "\n".join(out)
