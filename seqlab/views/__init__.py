"""What a person looks at: ``viz`` (loss curves, attention heatmaps, embedding maps, drawn with matplotlib's
object API) and ``explain`` (the notes' worked example traced with named dimensions). The layer table:
docs/architecture.md.
"""
