"""The base layer: what every other layer may import, and which imports no other part of seqlab.

``errors`` (SeqlabError and its one-line messages), ``io`` (atomic writes, JSON reads, the dataset cache folder),
``signals`` (the one place signal handlers are installed), ``console`` (whether a progress bar is drawn: a
terminal or a notebook), ``lazy`` (lazy re-exports for package ``__init__`` modules), ``version`` (the version
string), ``machine`` (the CPU model and ISA flags that results name) and ``config`` (the run config: TOML sections, presets, ``--set`` overrides; it knows no task). The layer table: docs/architecture.md.
"""
