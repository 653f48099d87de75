"""Detector and depth adapters, and the pure rules that judge generated images.

``rules`` holds the geometry (no models); ``base`` the interfaces and records; ``hf`` the
transformers adapters; ``colour`` the deterministic test components; ``judge`` the pipeline
that turns an image store into ISM (Box) predictions and metrics.
"""
