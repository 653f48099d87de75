"""GenEval 2 (facebookresearch/GenEval2): text-to-image prompts, each with its atoms as VQA
questions (``geneval2_data.jsonl``: ``prompt, atom_count, vqa_list [[question, answer]],
skills``), judged on the generated images by a multimodal LLM - here its ``position`` atoms
(``--option skills=position,object,...`` for others; yes/no atoms only).

``--data`` is ``geneval2_data.jsonl``; ``--images`` the images: GenEval 2's own JSON ``{prompt:
image path}`` or a ``spatialprobe synthesize`` run of its prompts
(:mod:`spatialprobe.benchmarks.prompt_images`). Each atom is an item: the question with "Answer in one
word." (``evaluation.py``), asked of the judge (``--model``, any multimodal LLM) by likelihood,
the options ``Yes``/``yes``/``No``/``no``. Soft-TIFA's atom score is the judge's probability mass
on the right answer's words, ``atom_score`` (percent) = 100 x the summed probability of its
variants (the engine scores each variant as the whole reply; GenEval 2 reads the first generated
token, which is the same for a one-token word, and also counts `` yes``/`` Yes``). Official
metrics: ``soft_tifa_am`` - the mean atom score (its ``soft_tifa_analysis.py`` per-skill score,
the ``position`` number), per skill - beside the hard ``accuracy`` (TIFA: the best option right);
``soft_tifa_gm`` - the mean over prompts of the geometric mean of their atoms' scores
(``evaluation.py --method soft_tifa_gm`` restricted to the chosen atoms) - is a point estimate
written to ``geneval2.json`` (a statistic of prompts, not of rows: no interval). Resampled by
prompt; each position atom states its fact where its question reads "Is the A to the left of
the B?" and its kind.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from spatialprobe.benchmarks import base
from spatialprobe.benchmarks.base import Official, Source, SourceItem
from spatialprobe.errors import UsageError
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.registry import component

OPTIONS: dict[str, str] = {"skills": "comma-separated GenEval 2 skills to judge (default: position)"}
OFFICIAL = (Official({"accuracy": "accuracy"}, ("skill",)),
            Official({"soft_tifa_am": "mean"}, ("skill",), pred="atom_score"))
REPLIES = ("Yes", "yes", "No", "no")
_FACT = re.compile(r"^(?:is|are) (?:the |a |an )?(?P<a>.+?) (?P<rel>to the left of|to the right of|on the left of|"
                   r"on the right of|left of|right of|above|below|on top of|under|behind|in front of|next to) "
                   r"(?:the |a |an )?(?P<b>.+?)\?*$", re.IGNORECASE)


def fact_of(question: str) -> tuple[str, str, str] | None:
    """(A, relation, B) of a position question ("Is the cat to the left of the dog?"), else None."""
    match = _FACT.match(question.strip())
    return (match["a"], match["rel"].lower(), match["b"]) if match else None


def scored(item: SourceItem, scores: Sequence[float]) -> dict[str, Any]:
    """``atom_score``: 100 x the probability mass of the right answer's words."""
    mass = sum(math.exp(s) for s, label in zip(scores, item.labels, strict=True) if label == item.gold)
    return {"atom_score": 100 * mass}


def geneval2_source(found: Mapping[str, Any]) -> Source:
    """The chosen atoms of the prompts that have images (:func:`base.given`)."""
    from spatialprobe.benchmarks.local_copy import read_records
    from spatialprobe.benchmarks.prompt_images import images_by_prompt

    if found.get("split") or found.get("subset"):
        raise UsageError("--split and --subset do not apply to geneval2; choose atoms with --option skills=.")
    if not found.get("data"):
        raise UsageError("geneval2 reads your copy of geneval2_data.jsonl: pass --data.")
    skills = tuple(s.strip() for s in (found["options"].get("skills") or "position").split(",") if s.strip())
    records = read_records(found["data"])
    images, recorded_images = images_by_prompt(found.get("images"), "geneval2")
    items, without, other = [], 0, 0
    for n in range(min(len(records.rows), found.get("limit") or len(records.rows))):
        prompt = str(records.require(n, "prompt")).strip()
        atoms, kinds = records.require(n, "vqa_list"), records.listed(n, "skills")
        if not isinstance(atoms, list) or not all(isinstance(a, list) and len(a) == 2 for a in atoms):
            raise records.error(n, "vqa_list", "expected a list of [question, answer] pairs")
        if len(atoms) != len(kinds):
            raise records.error(n, "skills", f"{len(kinds)} skills for {len(atoms)} atoms")
        chosen = [(j, q, a, k) for j, ((q, a), k) in enumerate(zip(atoms, kinds, strict=True)) if k in skills]
        if not chosen:
            continue
        if prompt not in images:
            without += 1
            continue
        for j, question, answer, kind in chosen:
            if str(answer).lower() not in ("yes", "no"):
                other += 1
                continue
            fact = fact_of(question)
            fields = {"prompt": f"p{n}", "skill": kind, "prompt_text": prompt}
            items.append(SourceItem(f"p{n}.{j}", f"{question} Answer in one word.", REPLIES,
                                    ("yes", "yes", "no", "no"), str(answer).lower(), images[prompt][0], (f"p{n}",),
                                    fields,
                                    images=tuple(images[prompt][1:]),
                                    fact=(fact if str(answer).lower() == "yes" else None)))
    if not items:
        raise UsageError(f"{found['data']}: no {', '.join(skills)} atom of a prompt with an image in --images")
    spec = Resampling(("yes", "no"), ("prompt",), key=("instance_id",), pooled=True, unit="prompts")
    settings = base.recorded("geneval2", found, str(found["data"]), records.version, image_set=recorded_images)
    return Source("geneval2", "geneval2", f"geneval2@{records.version}", ("yes", "no"), tuple(items), spec,
                  official=OFFICIAL, scored=scored, extras=prompt_means, settings=settings,
                  details={"total": len(items), "what": "atoms", "skills": list(skills),
                           "prompts_without_images": without, "atoms_not_yes_no": other})


def geometric_means(rows: Sequence[Mapping[str, Any]]) -> float | None:
    """Soft-TIFA GM: the mean over prompts of the geometric mean of their atoms' scores (percent;
    a zero atom makes its prompt 0, as scipy's ``gmean`` does)."""
    by_prompt: dict[str, list[float]] = {}
    for row in rows:
        if "atom_score" in row:
            by_prompt.setdefault(str(row["prompt"]), []).append(float(row["atom_score"]) / 100)
    if not by_prompt:
        return None
    means = [0.0 if min(v) <= 0 else math.exp(sum(math.log(x) for x in v) / len(v)) for v in by_prompt.values()]
    return 100 * sum(means) / len(means)


def prompt_means(run: Any, summary: Mapping[str, Any]) -> None:
    """``geneval2.json``: Soft-TIFA GM of the run's first condition (a point estimate)."""
    import json

    from spatialprobe.files import atomic_write_text

    rows = [json.loads(line) for line in run.file("predictions.jsonl").read_text().splitlines() if line.strip()]
    first = summary["details"]["conditions"][0]
    chosen = [r for r in rows if r.get("condition") == first]
    value = geometric_means(chosen)
    atomic_write_text(run.file("geneval2.json"), json.dumps(
        {"soft_tifa_gm": value, "prompts": len({r["prompt"] for r in chosen}), "condition": first}, indent=1) + "\n")


@component("source", "geneval2",
           "GenEval 2 position atoms on generated images: Soft-TIFA AM (and GM) by a multimodal LLM judge")
def from_settings(settings: Mapping[str, Any], seed: int) -> Source:
    """The source of ``spatialprobe bench geneval2`` settings or of a run's recorded ones."""
    return geneval2_source(base.given(settings))


def demo(folder: Path, seed: int = 0) -> Any:
    """A synthetic copy in GenEval 2's layout (:mod:`spatialprobe.benchmarks.demo_copy`):
    ``geneval2_data.jsonl`` and, as the "generated" images, drawn scenes named by a JSON ``{prompt: path}``."""
    import random

    from spatialprobe.benchmarks import demo_copy as d

    rng, rows, images = random.Random(seed), [], {}
    for k in range(8):
        scene = d.pair(rng)
        prompt = f"a {scene.a} {d.RELATIONS[scene.relation]} a {scene.b}"
        shown = d.Pair(scene.a, scene.b, scene.relation if k % 4 else d.OPPOSITE[scene.relation])  # some wrong
        images[prompt] = str(Path(d.save(d.draw(shown), folder / "images" / f"{k}.png")).relative_to(folder))
        rows.append({"prompt": prompt, "atom_count": 3,
                     "vqa_list": [[f"Is there a {scene.a} in the image?", "Yes"],
                                  [f"Is the {scene.a} {d.RELATIONS[scene.relation]} the {scene.b}?", "Yes"]],
                     "skills": ["object", "position"]})
    d.write_json(folder / "images.json", images)
    return d.Demo(d.write_jsonl(folder / "geneval2_data.jsonl", rows), images=folder / "images.json")
