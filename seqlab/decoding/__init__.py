"""The decoding layer: turning a trained model's scores into sequences.

``decode`` (greedy, sampling, the cached and compiled decode step of a language model) and ``beam`` (beam search
for the translators). It reads models; the tasks above call it. The layer table: docs/architecture.md.
"""
