"""Judging generated images as run kinds: ISM (Box), ISM (Human), VISOR."""
