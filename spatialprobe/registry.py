"""Name -> lazily imported component.

Listing components never imports torch: each entry is a ``module:attribute`` string that is
imported only when the component is built. Components are grouped by kind (``model``,
``synthesizer``, ``detector``, ``depth``, ...), so ``spatialprobe ls`` can show each group.
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass, field
from typing import Any

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


# Built-in components. Each module that adds a capability registers its entries here, so the
# whole catalogue is readable in one place.
# Models (issue 21): every adapter speaks one vocabulary (spatialprobe.models.base): score(requests)
# and/or generate(requests); `--scorer auto` and the commands choose among them by the checkpoint's
# configuration (spatialprobe.models.choice), never by its name.
register("model", "hf-mlm", "spatialprobe.models.masked_lm:MaskedLMScorer",
         "any transformers AutoModelForMaskedLM checkpoint or local directory (converted VinVL too)")
register("model", "hf-causal", "spatialprobe.models.causal_lm:CausalLMScorer",
         "any transformers AutoModelForCausalLM checkpoint: answer + rest of sentence log-likelihood")
register("model", "dummy", "spatialprobe.models.dummy:DummyScorer",
         "UNTRAINED smoke-test scorer: deterministic pseudo-random scores, no download")
register("model", "vilt", "spatialprobe.models.vilt:ViltMaskedLMScorer",
         "ViLT masked-LM (dandelin/vilt-b32-mlm) with a blank or synthesized image")
register("model", "t5", "spatialprobe.models.qa_models:T5YesNo",
         "T5/UnifiedQA seq2seq checkpoint; each option scored by decoder likelihood")
register("model", "vilt-vqa", "spatialprobe.models.qa_models:ViltVQA",
         "ViltForQuestionAnswering; each option's answer-class logit, or the argmax class as text")
register("model", "blip", "spatialprobe.models.qa_models:BlipVQA",
         "BlipForQuestionAnswering; each option by answer-decoder likelihood, or generation")
register("model", "contrastive", "spatialprobe.models.clip_scoring:ClipSimilarity",
         "CLIP / SigLIP / SigLIP 2: each option's sentence scored against the image")
register("model", "generate", "spatialprobe.models.mqa_models:GenerativeAnswerer",
         "any AutoModelForImageTextToText checkpoint with its processor: greedy generation")
register("subterms", "conceptnet", "spatialprobe.generalize.subterms:ConceptNetSubterms",
         "IsA subterms from a conceptnet-lite database file (no download)")
register("subterms", "wordnet", "spatialprobe.generalize.subterms:WordNetSubterms",
         "WordNet hyponyms through nltk (data directory given or found; no download)")
# synthesis (issue 3): text-to-image synthesizers used as probes
register("synthesizer", "vqgan-clip", "spatialprobe.synthesis.vqgan_clip:VQGANCLIP",
         "VQGAN (diffusers VQModel) latents optimised against a transformers CLIP; paper recipe")
register("synthesizer", "diffusers", "spatialprobe.synthesis.diffusion:DiffusersPipeline",
         "any diffusers text-to-image pipeline by id or path (Stable Diffusion, SDXL, ...)")
register("synthesizer", "shapes", "spatialprobe.synthesis.shapes:ShapesSynthesizer",
         "UNTRAINED: colour-coded boxes in the prompt's relation, for --detector/--depth colour")
# Judging generated images (issue 4): detectors, depth estimators and position judges.
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


def _register_tasks() -> None:
    """Every task file in ``spatialprobe/tasks/`` (reading the folder imports nothing heavy)."""
    from importlib import resources

    for entry in sorted(resources.files("spatialprobe.tasks").iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".json"):
            name = entry.name.removesuffix(".json")
            register("task", name, f"spatialprobe.tasks:{name}", f"task file tasks/{entry.name}")


_register_tasks()
# Sources (issue 28): a benchmark is one module of spatialprobe/benchmarks/ and one line here; the
# target rebuilds the source from a run's recorded settings (spatialprobe.engine.rebuild.rebuild_source).
register("source", "task", "spatialprobe.benchmarks.commonsense:from_settings",
         "a task's instances as multiple choice, over folds")
register("source", "vsr", "spatialprobe.benchmarks.vsr:from_settings",
         "VSR captions: yes/no question or caption vs negation")
register("source", "spatialmqa", "spatialprobe.benchmarks.spatialmqa:from_settings",
         "SpatialMQA lettered questions: lenient/strict, 2PR/(P+R) F1, per perspective and axis")
register("source", "qa", "spatialprobe.benchmarks.qa:from_settings", "yes/no QA about scenarios, text or their images")
register("source", "posqa", "spatialprobe.benchmarks.posqa:from_settings",
         "POSQA: which of two entities is bigger (yes/no or which one), text")
register("source", "spatialeval", "spatialprobe.benchmarks.spatialeval:from_settings",
         "SpatialEval: map, maze, grid, real; tqa/vqa/vtqa; exact match and the authors' parser")
register("source", "ewok", "spatialprobe.benchmarks.ewok:from_settings",
         "EWoK spatial/physical minimal pairs from its password-protected archive, read in memory")
register("source", "geneval2", "spatialprobe.benchmarks.geneval2:from_settings",
         "GenEval 2 position atoms on generated images: Soft-TIFA AM (and GM) by a multimodal LLM judge")
register("source", "spatialgeneval", "spatialprobe.benchmarks.spatialgeneval:from_settings",
         "SpatialGenEval's ten multiple-choice questions per generated image, by a multimodal LLM judge")
register("source", "comfort", "spatialprobe.benchmarks.comfort:from_settings",
         "COMFORT rotation sweeps: P(yes) per angle, symmetry/smoothness/std/cosine metrics per sweep")
register("source", "whatsup", "spatialprobe.benchmarks.whatsup:from_settings",
         "What'sUp: caption ranking or lettered captions; individual, pair and set accuracy (controlled A/B, COCO, VG)")
register("source", "cv-bench", "spatialprobe.benchmarks.cvbench:from_settings",
         "CV-Bench 2-D/3-D lettered questions: accuracy per source/type/task, official 1/2((ADE20K+COCO)/2+Omni3D)")
register("source", "3dsrbench", "spatialprobe.benchmarks.threedsrbench:from_settings",
         "3DSRBench lettered 3-D questions: vanilla, flip, circular, flip+circular (VLMEvalKit's or authors' groups)")
register("source", "blink", "spatialprobe.benchmarks.blink:from_settings",
         "BLINK spatial subtasks (several images asked together): accuracy per subtask, mean over subtasks")
register("source", "embspatial", "spatialprobe.benchmarks.embspatial:from_settings",
         "EmbSpatial-Bench lettered questions: accuracy per source (AI2-THOR, MP3D, ScanNet) and relation")
register("source", "site", "spatialprobe.benchmarks.site:from_settings",
         "SITE lettered questions (one or several images): accuracy per category/dataset, chance-adjusted accuracy")
register("source", "mmsi", "spatialprobe.benchmarks.mmsi:from_settings",
         "MMSI-Bench multi-image lettered questions (all images asked together): accuracy per question type")
register("source", "viewspatial", "spatialprobe.benchmarks.viewspatial:from_settings",
         "ViewSpatial-Bench camera/person-perspective questions: accuracy per type, the authors' last-line reader")
register("source", "mindcube", "spatialprobe.benchmarks.mindcube:from_settings",
         "MindCube multi-view lettered questions (tiny or full): accuracy per setting, chance and frequency baselines")
register("source", "omnispatial", "spatialprobe.benchmarks.omnispatial:from_settings",
         "OmniSpatial lettered questions: accuracy per task/sub-task type, mean over sampled runs, copy recorded")
register("source", "spatialscore", "spatialprobe.benchmarks.spatialscore:from_settings",
         "SpatialScore version_0: multiple choice, yes/no and numeric items of 11 sources, scored by its scripts")
register("source", "vsibench", "spatialprobe.benchmarks.vsibench:from_settings",
         "VSI-Bench (and --subset debiased) video questions as sampled frames: accuracy, MRA, the authors' overall")
# Readers: a reply (or the options' scores) -> a label, or nothing, with the reason. Each benchmark
# names its official reader (its authors' code, transcribed); every benchmark is also read by strict.
for _name, _target, _summary in (
        ("strict", "strict:STRICT", "the reply is exactly an option's letter or text (or a number); else nothing"),
        ("toolkit", "strict:TOOLKIT", "the engine's parser: letter forms, 'Answer: B', option text, yes/no; numbers"),
        ("site", "site:SITE", "SITE's parse_multi_choice_response: (X), a lone capital, X., X:; else a seeded draw"),
        ("mmsi", "mmsi:MMSI", "MMSI-Bench's README extraction: ``X``, `X`, {X}, then a lone A-D"),
        ("mmsi-code", "mmsi:MMSI_CODE", "MMSI-Bench's mmsi_bench.py extraction: ``X``, `X`, then a lone A-D"),
        ("mmsi-lmms", "mmsi:MMSI_LMMS", "lmms-eval's mmsi_bench extraction: as the README's, A-F in any case"),
        ("lmms-first-letter", "lmms:FIRST_LETTER", "lmms-eval's _extract_answer_letter (CV-Bench, EmbSpatial)"),
        ("vlmeval-can-infer", "vlmeval_mcq:CAN_INFER", "VLMEvalKit's can_infer (3DSRBench, VLMEvalKit MCQ sets)"),
        ("vlmeval-can-match-option", "vlmeval_mcq:CAN_MATCH_OPTION",
         "VLMEvalKit's can_match_option (its spatial suite: MMSI-Bench, SITE, ViewSpatial, EmbSpatial)"),
        ("blink", "blink:BLINK", "BLINK's analyze_answer: 'X', '(X)' or one (X) word; its GPT-3.5 matcher not run"),
        ("spatialeval", "spatialeval:SPATIALEVAL", "SpatialEval's extractors and substring verdict"),
        ("spatialmqa", "spatialmqa:LENIENT", "SpatialMQA's lenient verdict as its scripts run (substring either way)"),
        ("spatialmqa-legacy", "spatialmqa:LEGACY", "the retired spatialmqa kind's lenient rule (on/above clause)"),
        ("whatsup", "ranking:WHATSUP", "What'sUp: the best-scored caption, ties with the right one right"),
        ("comfort", "ranking:COMFORT", "COMFORT: yes where P(yes) > 0.5"),
        ("viewspatial", "viewspatial:VIEWSPATIAL", "ViewSpatial's evaluate.py: the last line's first whole A-D"),
        ("mindcube", "mindcube:MINDCUBE", "MindCube's extract_answer: a cascade of patterns, each its last match"),
        ("omnispatial-re", "omnispatial:RE", "OmniSpatial's api_eval.py re: the last 'Answer: X'; none reads A"),
        ("omnispatial-direct", "omnispatial:DIRECT", "OmniSpatial's api_eval.py direct: the first character"),
        ("omnispatial-json", "omnispatial:JSON", "OmniSpatial's api_eval.py json: the JSON answer; failure reads A"),
        ("spatialscore", "spatialscore:SPATIALSCORE", "SpatialScore version_0's extractors by question type"),
        ("vsibench", "vsibench:VSIBENCH", "thinking-in-space's first token: a letter in any case, or a number")):
    register("reader", _name, f"spatialprobe.readers.{_target}", _summary)
# Run kinds (the run spine): what `spatialprobe run CONFIG.json` can replay.
register("run-kind", "probe", "spatialprobe.probing.run:ProbeRun",
         "probe a masked LM / ViLT / dummy scorer: cloze prompts, per-fold selection")
register("run-kind", "synthesize", "spatialprobe.synthesis.runner:SynthesisRun",
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
for _retired in ("qa", "vsr", "spatialmqa"):  # issue 28: their folders are read as ask runs (one mapping)
    register("run-kind", _retired, "spatialprobe.engine.legacy:Retired",
             "retired: a folder of this kind is migrated to an ask run (spatialprobe run CONFIG)")
register("run-kind", "ask", "spatialprobe.engine.run:AskRun",
         "questions to a multimodal LLM (any task, VSR, SpatialMQA): both protocols, blind baselines")
register("run-kind", "vsr-train", "spatialprobe.training.vilt_vsr:VSRTrainRun",
         "fine-tune ViLT on a VSR split (best dev checkpoint), then test it")
register("model", "hf-mllm", "spatialprobe.models.mllm:MultimodalLLM",
         "any AutoModelForImageTextToText chat checkpoint (LLaVA, Qwen2.5-VL, SmolVLM, Llama 3.2 Vision, ...)")
register("model", "openai-api", "spatialprobe.models.openai_api:OpenAIServer",
         "any OpenAI-compatible server (vLLM, SGLang, TGI, transformers serve, hosted): chat + /completions")
# Interop (issue 31): other harnesses' per-item logs read as runs (spatialprobe import FORMAT).
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
