"""Generalized positional-relationship scenarios (``spatialprobe generalize``): persons and
objects replaced by their subterms (ConceptNet or WordNet), filtered by a text corpus."""
