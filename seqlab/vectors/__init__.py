"""Word vectors: ``keyed`` (KeyedVectors: look-ups, neighbours, analogies, evaluations, files). The layer table:
docs/architecture.md.
"""
