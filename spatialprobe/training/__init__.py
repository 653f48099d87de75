"""Supervised baselines trained by the toolkit: ViLT fine-tuned on VSR (the VSR paper's)."""
