"""spatialprobe: measure the spatial commonsense of language, vision-language and text-to-image models."""

__version__ = "0.1.0"
