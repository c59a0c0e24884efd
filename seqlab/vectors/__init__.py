"""Word vectors, the one home for them: ``formats`` (reading word2vec text and binary, GloVe text, embedding runs
and named vectors such as glove-6b-50d), ``keyed`` (KeyedVectors: look-ups, neighbours, analogies, evaluations,
files) and ``embedding`` (the ``model.vectors`` keys and their one check, the vocabulary join with its coverage
logged, and starting a tagger's, classifier's or translator's embeddings from them). Importing any of them does
not import torch: only the embedding initialisers do, when called. The layer table: docs/architecture.md.
"""
