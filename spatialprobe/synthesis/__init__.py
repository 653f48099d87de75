"""Image synthesis models as probes: VQGAN+CLIP, diffusers pipelines, Ray fan-out.

Heavy imports (torch, diffusers, transformers, ray) happen only inside the submodules that
need them; importing this package is cheap.
"""

from spatialprobe.synthesis.jobs import Job, JobResult, image_seed
from spatialprobe.synthesis.prompt_sets import PromptSet, load_prompts
from spatialprobe.synthesis.run import SynthesisSummary, synthesize
from spatialprobe.synthesis.settings import VQGANCLIPSettings, load_preset, preset_names, with_overrides

__all__ = ["Job", "JobResult", "PromptSet", "SynthesisSummary", "VQGANCLIPSettings",
           "image_seed", "load_preset", "load_prompts", "preset_names", "synthesize",
           "with_overrides"]
