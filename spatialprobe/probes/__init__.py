"""Probes: cloze scorers (masked LMs, vision-language models), prompt selection over folds."""
