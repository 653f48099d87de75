"""Judging generated images as run kinds: ISM (Box) with a detector, depth and a position rule,
ISM (Human), VISOR, the VQA judge, and ``judge compare``."""
