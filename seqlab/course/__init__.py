"""The course: exercises for every chapter of the notes, checked against seqlab's own verified code.

>>> from seqlab import course
>>> course.exercises("06")[0].signature          # what to write
>>> course.check("06.1", scaled_dot_product_attention)    # passed, or the first failing case and the mistake

Each exercise calls the learner's function on inputs drawn at several sizes that all differ, compares it with
seqlab's implementation within a tolerance taken from an error bound, and names the usual wrong answers
(:mod:`seqlab.course.exercise`, :mod:`seqlab.course.checker`). ``seqlab course check 06.1 my_attention.py`` does
the same from a shell. The solutions live in the repository (docs/course/solutions/), not in the package.
Every tutorial of the site is also a notebook (``seqlab course get``), whose helpers are
:mod:`seqlab.course.notebook`.
"""

from __future__ import annotations

from seqlab.base.lazy import lazy_exports

# imported on first use: the notebooks' helpers (seqlab.course.notebook) and `seqlab course get` load no torch
_EXPORTS: dict[str, str] = {
    "CHAPTERS": "seqlab.course.catalogue",
    "exercises": "seqlab.course.catalogue",
    "CheckResult": "seqlab.course.checker",
    "check": "seqlab.course.checker",
    "Case": "seqlab.course.exercise",
    "Exercise": "seqlab.course.exercise",
    "Mistake": "seqlab.course.exercise",
}
__all__ = ["CHAPTERS", "Case", "CheckResult", "Exercise", "Mistake", "check", "exercises"]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
