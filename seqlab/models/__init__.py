"""Models, one file per family: ``transformer`` (encoder, decoder, encoder-decoder, decoder-only LM),
and the other families beside it. Import from the module, e.g.
``from seqlab.models.transformer import TransformerLM, TransformerLMConfig``.
"""
