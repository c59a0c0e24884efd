"""``seqlab course exercises [CHAPTER]`` (what to write), ``seqlab course check ID FILE.py`` (a learner's
function against seqlab's own: exit 0 when it passes, 1 on a wrong answer, 2 on bad input), ``seqlab course list``
(the chapters' notebooks and how long each took at both sizes) and ``seqlab course get 03|tour|all [--dir DIR]
[--force]`` (writes the notebooks, nothing else)."""

from __future__ import annotations

import argparse
from pathlib import Path

from seqlab.base.errors import SeqlabError, shown
from seqlab.commands import add_parser


def add(sub) -> None:
    p = add_parser(
        sub,
        "course",
        help="the course's exercises: list them, check your solution of one",
        example="seqlab course check 06.1 my_attention.py",
        description="Exercises for every chapter of the notes, each checked against seqlab's own implementation "
        "of the same equation on inputs at several sizes; a wrong answer gets the first failing case and, when it "
        "is a usual mistake, its name and the notes' equation.",
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    listing = add_parser(actions, "exercises", help="list the exercises: id, the function to write, the notes' "
                         "section", example="seqlab course exercises 06")
    listing.add_argument("chapter", metavar="CHAPTER", nargs="?", help="one chapter, 01 to 07 (default: all)")
    check = add_parser(actions, "check", help="check the function FILE.py defines against seqlab's (exit 0: "
                       "passed, 1: a wrong answer, 2: bad input)", example="seqlab course check 06.1 my_attention.py")
    check.add_argument("exercise", metavar="ID", help="the exercise, e.g. 06.1 (`seqlab course exercises`)")
    check.add_argument("file", metavar="FILE.py", help="a Python file defining the function the exercise names")
    add_parser(actions, "list", help="the notebooks, one per chapter and the tour, with the seconds each took at "
               "the tiny and the documented size (as measured; 'not measured yet' where no run was recorded)",
               example="seqlab course list")
    get = add_parser(actions, "get", help="write a chapter's notebook (or the tour's, or all of them) into a folder; "
                     "never over an edited copy without --force", example="seqlab course get all --dir course")
    get.add_argument("which", metavar="CHAPTER", help="a chapter (01 to 07), tour, or all")
    get.add_argument("--dir", default=".", metavar="DIR", help="the folder to write into, made when missing "
                     "(default: the current folder)")
    get.add_argument("--force", action="store_true", help="replace a notebook of seqlab's that differs (your "
                     "edits are lost); a file seqlab did not write is never replaced")
    p.set_defaults(run=run, action=None)


def run(args: argparse.Namespace) -> int:
    if args.action == "exercises":
        from seqlab import course

        for exercise in course.exercises(args.chapter):
            print(f"{exercise.id}\t{exercise.signature}\t{exercise.title} ({exercise.section})")
        return 0
    if args.action == "check":
        from seqlab import course
        from seqlab.course.catalogue import find

        exercise = find(args.exercise)
        if exercise is None:
            raise SeqlabError(f"there is no exercise {args.exercise!r}; `seqlab course exercises` lists them")
        result = course.check(exercise.id, _defined(Path(args.file), exercise.name, exercise.signature))
        print(result)
        return 0 if result.passed else 1
    if args.action == "list":
        return _list()
    if args.action == "get":
        from seqlab.course import shipped

        for path, what in shipped.write(shipped.resolve(args.which), args.dir, force=args.force):
            print(f"{what}\t{shown(path)}")
        return 0
    raise SeqlabError("missing action; use `seqlab course exercises`, `seqlab course check ID FILE.py`, "
                      "`seqlab course list` or `seqlab course get CHAPTER`")


def _list() -> int:
    """One line per notebook: its name, the tiny and the documented size's time, its title; then the CPUs."""
    from seqlab.course import shipped

    rows = shipped.listing()
    for row in rows:
        print(f"{row['name']}\ttiny: {shipped.duration(row['tiny'])}\tdocumented: "
              f"{shipped.duration(row['documented'])}\t{row['title']}")
    for size in ("tiny", "documented"):
        cpus = sorted({row[size]["cpu"] for row in rows if (row[size] or {}).get("seconds") and row[size].get("cpu")})
        if cpus:
            print(f"# {size}: measured on {'; '.join(cpus)}")
    return 0


def _defined(path: Path, name: str, signature: str):
    """The function ``name`` that the learner's file defines (the file runs as a script would)."""
    if not path.is_file():
        raise SeqlabError(f"{shown(path)} not found; give the Python file that defines {name}")
    source = path.read_text(encoding="utf-8", errors="replace")
    try:
        code = compile(source, str(path), "exec")
    except SyntaxError as error:
        raise SeqlabError(f"{shown(path)} line {error.lineno}: {error.msg}; fix it and check again") from None
    namespace: dict = {"__name__": "__course__", "__file__": str(path)}
    try:
        exec(code, namespace)  # the learner's own file, run as `python FILE.py` would run it
    except Exception as error:
        raise SeqlabError(f"running {shown(path)} raised {type(error).__name__}: {' '.join(str(error).split())}; "
                          "fix it and check again") from None
    fn = namespace.get(name)
    if not callable(fn):
        raise SeqlabError(f"{shown(path)} defines no function {name}; the exercise asks for {signature}")
    return fn
