"""The course: exercises for every chapter of the notes, checked against seqlab's own verified code.

>>> from seqlab import course
>>> course.exercises("06")[0].signature          # what to write
>>> course.check("06.1", scaled_dot_product_attention)    # passed, or the first failing case and the mistake

Each exercise calls the learner's function on inputs drawn at several sizes that all differ, compares it with
seqlab's implementation within a tolerance taken from an error bound, and names the usual wrong answers
(:mod:`seqlab.course.exercise`, :mod:`seqlab.course.checker`). ``seqlab course check 06.1 my_attention.py`` does
the same from a shell. The solutions live in the repository (docs/course/solutions/), not in the package.
"""

from seqlab.course.catalogue import CHAPTERS, exercises
from seqlab.course.checker import CheckResult, check
from seqlab.course.exercise import Case, Exercise, Mistake

__all__ = ["CHAPTERS", "Case", "CheckResult", "Exercise", "Mistake", "check", "exercises"]
