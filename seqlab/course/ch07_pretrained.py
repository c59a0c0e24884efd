"""Exercises of this chapter (being written)."""

from seqlab.course.exercise import Exercise

EXERCISES: tuple[Exercise, ...] = ()
