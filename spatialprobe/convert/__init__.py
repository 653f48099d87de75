"""Checkpoint converters: VinVL/Oscar -> transformers, taming VQGAN -> diffusers."""
