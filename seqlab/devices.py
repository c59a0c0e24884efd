"""A former path, refused with a pointer: ``seqlab.devices`` is now :mod:`seqlab.training.devices`
(docs/architecture.md, "Moved paths")."""

raise ImportError("seqlab.devices has moved to seqlab.training.devices; import that module instead",
                  name=__name__)
