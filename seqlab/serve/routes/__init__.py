"""The routes of ``seqlab serve``, one router per page kind: :mod:`.runs` (the pages, the runs list, a run's
metrics, evaluation and record), :mod:`.lm`, :mod:`.translation`, :mod:`.tagging`, :mod:`.classification`,
:mod:`.embeddings` (word vectors and sentence similarity) and :mod:`.forecasting`; ``create_app`` includes them
(:mod:`seqlab.serve.app`)."""
