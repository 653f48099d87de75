"""Cloze prompts: templates and candidate sets of each task, back-translated candidates, the
questions a task asks, and the lm-eval export of a task."""
