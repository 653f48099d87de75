"""Name -> lazily imported component.

Listing components never imports torch: each entry is a ``module:attribute`` string that is
imported only when the component is built. Components are grouped by kind (``model``,
``synthesizer``, ``detector``, ``depth``, ...), so ``spatialprobe ls`` can show each group.

Benchmarks, model adapters and readers declare themselves where they are written, with the
decorator :func:`component` (``@component("source", "vsr", "what it is")`` on a benchmark's
builder, on an adapter's class, or ``NAME = component("reader", ...)(Reader(...))`` on a reader):
:func:`discover` reads those declarations from the modules' source text without importing them,
so a new benchmark, adapter or reader is one file. The other kinds are listed at the end of this
module.
"""

from __future__ import annotations

import ast
import difflib
import importlib
import importlib.util
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from spatialprobe.errors import UnknownComponent


@dataclass(frozen=True)
class Spec:
    """A component as data: its registered name and the keyword arguments it is built with."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "args": dict(self.args)}




_REGISTRY: dict[str, dict[str, tuple[str, str]]] = {}


def register(kind: str, name: str, target: str, summary: str = "") -> None:
    """Register ``target`` (``"package.module:attr"``) under ``kind``/``name``."""
    _REGISTRY.setdefault(kind, {})[name] = (target, summary)


T = TypeVar("T")

DECLARING_PACKAGES = ("spatialprobe.benchmarks", "spatialprobe.models", "spatialprobe.readers")
"""The packages whose modules declare their components with :func:`component`."""


def component(kind: str, name: str, summary: str = "") -> Any:
    """Declare the decorated class or function as ``kind``/``name`` (``summary``: one line for
    ``spatialprobe ls``). Read from the source by :func:`discover`; a class or function declared
    outside :data:`DECLARING_PACKAGES` (a test's own component) is registered when its module runs."""

    def declare(obj: T) -> T:
        if (isinstance(obj, type) or callable(obj)) and name not in _REGISTRY.get(kind, {}) \
                and hasattr(obj, "__qualname__"):
            register(kind, name, f"{obj.__module__}:{obj.__qualname__}", summary)
        return obj

    return declare


_STRINGS = r"""((?:\s*(?:"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')\s*,?)+)"""
_DECLARATION = re.compile(r"^(?:@component\(" + _STRINGS + r"\)\n(?:@[^\n]*\n)*(?:class|def) (\w+)"
                          r"|(\w+) = component\(" + _STRINGS + r"\)\()", re.M)
"""A top-level ``@component("kind", "name", "summary")`` on a class or function, or
``NAME = component("kind", "name", "summary")(...)``: literal strings only, read without running."""


def discover(package: str) -> None:
    """Register every component the package's modules declare, reading their source only (a
    regular expression, not an import: listing components stays cheap)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return
    for path in sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.py")):
        text = path.read_text(encoding="utf-8")
        for match in _DECLARATION.finditer(text):
            args_text, bound = (match.group(1), match.group(2)) if match.group(2) else (match.group(4), match.group(3))
            kind, name, *summary = ast.literal_eval(f"({args_text},)")
            register(kind, name, f"{package}.{path.stem}:{bound}", " ".join(summary))


def names(kind: str) -> list[str]:
    return sorted(_REGISTRY.get(kind, {}))


def summaries(kind: str) -> dict[str, str]:
    return {name: summary for name, (_, summary) in sorted(_REGISTRY.get(kind, {}).items())}


def kinds() -> list[str]:
    return sorted(_REGISTRY)


def lookup(kind: str, name: str) -> Any:
    """Import and return the object registered as ``kind``/``name``."""
    entries = _REGISTRY.get(kind, {})
    if name not in entries:
        close = difflib.get_close_matches(name, list(entries), n=3)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise UnknownComponent(
            f"Unknown {kind} {name!r}.{hint} Available: {', '.join(sorted(entries)) or 'none'}."
        )
    module_name, _, attr = entries[name][0].partition(":")
    return getattr(importlib.import_module(module_name), attr)


def build(kind: str, spec: Spec) -> Any:
    return lookup(kind, spec.name)(**spec.args)


# Benchmarks (kind "source"), model adapters (kind "model") and readers (kind "reader") declare
# themselves with @component in their own modules (discovered below). Model adapters speak one
# vocabulary (spatialprobe.models.base): score(requests) and/or generate(requests); `--backend` names
# one, or the commands choose among them by the checkpoint's configuration (spatialprobe.models.choice).
# The other kinds are listed here:
register("subterms", "conceptnet", "spatialprobe.generalize.subterms:ConceptNetSubterms",
         "IsA subterms from a conceptnet-lite database file (no download)")
register("subterms", "wordnet", "spatialprobe.generalize.subterms:WordNetSubterms",
         "WordNet hyponyms through nltk (data directory given or found; no download)")
# Synthesis: text-to-image synthesizers used as probes
register("synthesizer", "vqgan-clip", "spatialprobe.synthesis.vqgan_clip:VQGANCLIP",
         "VQGAN (diffusers VQModel) latents optimised against a transformers CLIP; paper recipe")
register("synthesizer", "diffusers", "spatialprobe.synthesis.diffusion:DiffusersPipeline",
         "any diffusers text-to-image pipeline by id or path (Stable Diffusion, SDXL, ...)")
register("synthesizer", "shapes", "spatialprobe.synthesis.shapes:ShapesSynthesizer",
         "UNTRAINED: colour-coded boxes in the prompt's relation, for --detector/--depth colour")
# Judging generated images: detectors, depth estimators and position judges.
register("detector", "owlvit", "spatialprobe.detectors.hf:OwlDetector",
         "OWL-ViT open-vocabulary detector (default google/owlvit-base-patch32)")
register("detector", "owlv2", "spatialprobe.detectors.hf:owlv2",
         "OWLv2 open-vocabulary detector (default google/owlv2-base-patch16-ensemble)")
register("detector", "detr", "spatialprobe.detectors.hf:DetrDetector",
         "closed-set COCO detector (default facebook/detr-resnet-50) with an editable alias map")
register("detector", "mask2former", "spatialprobe.detectors.hf_more:Mask2FormerDetector",
         "GenEval's detector: Mask2Former COCO instances, box = tight box of the mask, score > 0.3")
register("detector", "grounding-dino", "spatialprobe.detectors.hf_more:GroundingDinoDetector",
         "Grounding DINO open-vocabulary detector (default IDEA-Research/grounding-dino-tiny)")
register("detector", "colour", "spatialprobe.detectors.colour:ColourDetector",
         "UNTRAINED test detector: boxes of colour-coded shapes, for tests and smoke runs")
register("depth", "dpt", "spatialprobe.detectors.hf:HFDepth",
         "DPT / any AutoModelForDepthEstimation (default Intel/dpt-large); disparity -> depth")
register("depth", "depth-anything", "spatialprobe.detectors.hf:depth_anything",
         "Depth Anything (default LiheYoung/depth-anything-small-hf); disparity -> depth")
register("depth", "colour", "spatialprobe.detectors.colour:ColourDepth",
         "UNTRAINED test depth: disparity read from the blue channel of colour-coded shapes")
# Judge rules: each a record (spatialprobe.judging.rulebook.record.JudgeRule) with its geometry,
# thresholds, modes and its benchmark's own score; `judge` reads nothing but the record.
register("position-judge", "vdg", "spatialprobe.judging.rulebook.seed_paper:VDG",
         "inside if box A within box B, else centre angle: above 45-135, below 225-315")
register("position-judge", "vdg-legacy", "spatialprobe.judging.rulebook.seed_paper:VDG_LEGACY",
         "VDG with the released code's opposite vertical sign (above/below swapped)")
register("position-judge", "visor", "spatialprobe.judging.rulebook.visor_sign:VISOR",
         "VISOR: sign of the centroid difference")
register("position-judge", "geneval", "spatialprobe.judging.rulebook.geneval:GENEVAL",
         "GenEval: centre offsets reduced by a margin of the box sizes")
register("position-judge", "t2i-compbench", "spatialprobe.judging.rulebook.t2i_compbench:T2I_COMPBENCH",
         "T2I-CompBench: dominant-axis sign, damped by IoU")
register("position-judge", "heim", "spatialprobe.judging.rulebook.heim:HEIM",
         "HEIM / DALL-Eval: dominant axis (--mode reference: one box per class, top-left corners, its sign)")
register("position-judge-3d", "t2i-compbench-3d", "spatialprobe.judging.rulebook.t2i_compbench_3d:T2I_COMPBENCH_3D",
         "T2I-CompBench++ 3-D (posrel3d): normalised disparity in each box (--mode reference: its overlap credit)")
register("comparison-judge", "area*depth^2", "spatialprobe.judging.rulebook.seed_paper:SIZE",
         "size: A larger when area(A) x depth(A)^2 > area(B) x depth(B)^2")
register("comparison-judge", "height*depth", "spatialprobe.judging.rulebook.seed_paper:HEIGHT",
         "height: A taller when height(A) x depth(A) > height(B) x depth(B)")


for _package in DECLARING_PACKAGES:
    discover(_package)


def _register_tasks() -> None:
    """Every task file in ``spatialprobe/tasks/`` (reading the folder imports nothing heavy)."""
    from importlib import resources

    for entry in sorted(resources.files("spatialprobe.tasks").iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".json"):
            name = entry.name.removesuffix(".json")
            register("task", name, f"spatialprobe.tasks:{name}", f"task file tasks/{entry.name}")


_register_tasks()
# Run kinds (the run spine): what `spatialprobe run CONFIG.json` can replay.
register("run-kind", "probe", "spatialprobe.probing.run:ProbeRun",
         "probe a masked LM / ViLT / dummy scorer: cloze prompts, per-fold selection")
register("run-kind", "synthesize", "spatialprobe.synthesis.run:SynthesisRun",
         "text-to-image synthesis: one image per (prompt, image index) into the image store")
register("run-kind", "judge", "spatialprobe.judging.box:JudgeRun",
         "ISM (Box): detector + depth + rule on an image run's images")
register("run-kind", "human", "spatialprobe.judging.human:HumanRun",
         "ISM (Human): annotators' answer files scored against gold, Cohen's kappa")
register("run-kind", "judge-compare", "spatialprobe.judging.judge_compare:JudgeCompareRun",
         "judge compare: judgements of the same images side by side (agreement, kappa, vs people, ranking)")
register("run-kind", "visor", "spatialprobe.judging.visor:VisorRun",
         "VISOR: OA, VISOR, VISOR_cond, VISOR_1..N of an SR2D image run or released detections")
register("run-kind", "vqa-judge", "spatialprobe.judging.vqa:VqaJudgeRun",
         "VQA judge: a multimodal LLM asked each image's claim, Soft-TIFA and hard yes/no scores")
register("run-kind", "vqa-visor", "spatialprobe.judging.vqa_visor:VqaVisorRun",
         "VISOR with a multimodal LLM asked whether each object is there and the relation holds")
for _retired in ("qa", "vsr", "spatialmqa"):  # their folders are read as ask runs (one mapping)
    register("run-kind", _retired, "spatialprobe.engine.legacy:Retired",
             "retired: a folder of this kind is migrated to an ask run (spatialprobe run CONFIG)")
register("run-kind", "ask", "spatialprobe.engine.run:AskRun",
         "questions to a multimodal LLM (any task, VSR, SpatialMQA): both protocols, blind baselines")
register("run-kind", "vsr-train", "spatialprobe.training.vilt_vsr:VSRTrainRun",
         "fine-tune ViLT on a VSR split (best dev checkpoint), then test it")
# Interop: other harnesses' per-item logs read as runs (spatialprobe import FORMAT).
register("run-kind", "imported", "spatialprobe.interop.imported_run:ImportedRun",
         "another harness's per-item log of one model on one benchmark (spatialprobe import)")
register("import-format", "plain", "spatialprobe.interop.plain:read", "JSON/JSONL/CSV with a field map (--id ...)")
register("import-format", "eee", "spatialprobe.interop.eee:read", "Every Eval Ever 0.3 instance-level JSON lines")
register("import-format", "lm-eval", "spatialprobe.interop.lm_eval:read",
         "lm-evaluation-harness --log_samples samples_TASK_*.jsonl (+ results_*.json)")
register("import-format", "lmms-eval", "spatialprobe.interop.lmms_eval:read",
         "lmms-eval --log_samples DATE_samples_TASK.jsonl, 0.6 nested and 0.7 flattened resps")
register("import-format", "vlmeval", "spatialprobe.interop.vlmeval:read",
         "VLMEvalKit MODEL_DATASET.xlsx/.tsv/.csv predictions or _result files (hit, circular g_index)")
register("import-format", "inspect", "spatialprobe.interop.inspect_log:read",
         "Inspect .eval/.json logs through inspect_ai.log.read_eval_log (extra: interop)")
