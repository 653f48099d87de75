"""Readers: a model's free-text reply read as one of an item's options, or as nothing, with the
rule that read it."""
