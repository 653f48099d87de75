"""Scorers: a batch of cloze prompts in, a score per answer word out (masked LM, causal LM, ViLT, dummy)."""
