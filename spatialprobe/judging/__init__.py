"""Judging generated images as run kinds: ISM (Box) with a detector, depth and a rule, ISM (Human),
VISOR, the VQA judge, and ``judge compare``; the rules themselves are records in ``rulebook/``."""
