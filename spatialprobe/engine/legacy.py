"""Run folders of the retired run kinds, read as ask runs: the explicit mapping.

Before the engine, ``vsr``, ``spatialmqa`` and ``qa`` were run kinds of their own; now every
benchmark is a source (:mod:`spatialprobe.benchmarks`) asked by the one ``ask`` kind
(:mod:`spatialprobe.engine.run`). A folder one of them wrote still resumes and replays: the
registry names :class:`Retired` for each old kind, whose ``from_spec`` maps

* the old ``config.json`` settings to the ask kind's (:func:`ask_run_of`: the same data file,
  images, split, part, limit and checkpoint, asked by likelihood under the real image condition,
  in the wording the old kind used - the contrastive captions of CLIP for VSR and SpatialMQA,
  the short question of T5 for text QA); a SpatialMQA run of the generate method is asked by
  the generate protocol, by the same ``generate`` adapter and ``max_new_tokens``, in the
  spatialmqa source's ``legacy-generate`` wording (the old prompt verbatim, replies matched to
  strict and lenient labels as the old kind matched them);
* each cached result to the ask kind's (:class:`Migration`): key ``ID`` -> ``real/ID`` (text QA:
  ``none/ID``, asked without an image), and the old
  row's scores -> ``{"likelihood": {"scores": [...], "option": ...}}`` with the option the old kind
  chose, so the predictions are the old ones, never recomputed; a generated reply (``output``) ->
  ``{"generate": {"reply", "option", "rule"}}``, parsed as the ask kind parses replies.

``spatialprobe run OLD/config.json`` migrates the folder in place (:meth:`Migration.translate`,
called by the spine's ``start``): its cache is translated in one transaction, its ``config.json``
becomes the ask run's, keeping its provenance with ``migrated_from`` (the old kind and identity);
nothing is computed. With ``--out NEW`` the ask run is computed there afresh (its provenance
names the config it came from). Ask folders written before the sources resume as they are (the
kind and its keys did not change). Image QA maps too: its per-image answers (``ID#IMAGE_INDEX``)
become the ask kind's (``real/ID``, ``real/ID#N``), and the old average of yes/no scores over a
scenario's images is the ask kind's vote. A ``--full-vocab`` image QA run (each image answered by
the VQA model's argmax class, the most frequent word over a scenario's images taken, any word
counted) becomes a generate run of the qa source with ``vote: words``
(:func:`spatialprobe.benchmarks.qa.word_vote`): each image's word is its reply, combined as the old
kind combined them. What has no faithful mapping is refused in one sentence: a SpatialMQA generate
run given a prompt of its own (``--scorer-arg prompt=...``), questions given in memory.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spatialprobe.engine.run import AskRun, AskRunSettings
from spatialprobe.errors import UsageError
from spatialprobe.runner.settings import Component
from spatialprobe.runner.spec import RunSpec, fingerprints, same_identity

RETIRED = ("vsr", "spatialmqa", "qa")
"""The run kinds whose folders this module reads as ask runs."""


@dataclass(frozen=True)
class Migration:
    """How a retired kind's folder becomes an ask run's: where it came from and how a cached
    result translates (old key and value -> ask key and value)."""

    kind: str
    identity: str
    result: Callable[[str, Mapping[str, Any]], tuple[str, dict[str, Any]]]

    def origin(self) -> dict[str, str]:
        """What the migrated folder's provenance records as ``migrated_from``."""
        return {"kind": self.kind, "identity": self.identity}

    def applies(self, config: Mapping[str, Any] | None) -> bool:
        """Whether ``config`` (a folder's ``config.json``) is the retired run this migrates."""
        return config is not None and (config.get("kind"), config.get("identity")) == (self.kind, self.identity)

    def translate(self, run: Any) -> int:
        """Rewrite ``run``'s cache (``run.sqlite``, table ``results``) as the ask run's, in one
        transaction (a kill leaves it old or new, never half); returns the rows translated."""
        import json

        with run.db() as conn:
            old = [(k, json.loads(v)) for k, v in conn.execute("SELECT key, value FROM results")]
            new = [self.result(k, v) for k, v in old]
            conn.execute("DELETE FROM results")
            conn.executemany("INSERT INTO results VALUES (?, ?)",
                             [(k, json.dumps(v, ensure_ascii=False)) for k, v in new])
        return len(new)


def _vsr_result(key: str, row: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """A VSRRun row -> the contrastive wording's answer: options (negation, caption), as
    :mod:`spatialprobe.benchmarks.vsr` words them; the caption was chosen where it scored higher."""
    option = row["caption"] if int(row["pred"]) == 1 else row["negation"]
    return f"real/{key}", {"likelihood": {"scores": [row["score_negation"], row["score_caption"]],
                                          "option": option}}


def _mqa_result(key: str, row: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """A SpatialMQARun row of the clip method -> the contrastive wording's answer (scores per option)."""
    return f"real/{key}", {"likelihood": {"scores": list(row["scores"]), "option": row["output"]}}


def _mqa_generate_result(options: Mapping[str, tuple[str, ...]]
                         ) -> Callable[[str, Mapping[str, Any]], tuple[str, dict[str, Any]]]:
    """A SpatialMQARun row of the generate method -> the ask kind's generated answer: the old reply
    (``output``), parsed against the item's options (``options``: item key -> its options) as the ask
    kind parses every reply; the strict and lenient labels the old kind cached are derived from the
    reply again by the same rules (the ``spatialmqa-legacy`` reader, :mod:`spatialprobe.readers.spatialmqa`)."""
    from spatialprobe.readers.option_parser import parse_answer, spatialmqa_option

    def result(key: str, row: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        parsed = parse_answer(row["output"], options[key], spatialmqa_option)
        return f"real/{key}", {"generate": {"reply": row["output"], "option": parsed.option, "rule": parsed.rule}}
    return result


def _qa_result(key: str, row: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """A text QARun answer -> the short wording's answer (options yes, no), asked without an image."""
    return f"none/{key}", {"likelihood": {"scores": [row["yes_score"], row["no_score"]],
                                          "option": str(row["answer"]).lower()}}


def _image_keys(source: Any, images: str, partial: bool) -> dict[str, str]:
    """Image QA's keys (``ID#IMAGE_INDEX``, one per image of a question's scenario) -> the ask kind's
    (``real/ID`` for the first image the source asks, ``real/ID#N`` for the N-th further one)."""
    from spatialprobe.imagestore import open_image_run

    store, _ = open_image_run(images, partial=partial)
    index = {str(record.path): record.image_index for record in store.records()}
    keys = {}
    for item in source.items:
        for n, path in enumerate((item.image, *item.images)):
            keys[f"{item.key}#{index[str(path)]}"] = f"real/{item.key}" + (f"#{n}" if n else "")
    return keys


def _image_qa_result(keys: Mapping[str, str]) -> Callable[[str, Mapping[str, Any]], tuple[str, dict[str, Any]]]:
    """An image QA answer about one image -> the short wording's answer about it. The old kind
    averaged the yes and no scores over a scenario's images and answered yes where yes >= no; the ask
    kind averages each option's score and takes the first of equal ones (yes): the same answer."""
    def result(key: str, row: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        return keys[key], {"likelihood": {"scores": [row["yes_score"], row["no_score"]],
                                          "option": str(row["answer"]).lower()}}
    return result


def _image_qa_word(keys: Mapping[str, str]) -> Callable[[str, Mapping[str, Any]], tuple[str, dict[str, Any]]]:
    """A ``--full-vocab`` image QA answer about one image -> the short wording's generated answer: the
    old answer word (the argmax class) is the reply, parsed to yes or no as the ask kind parses
    replies; the old kind's yes/no scores are dropped (the generate run asks none)."""
    from spatialprobe.readers.option_parser import parse_answer

    def result(key: str, row: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        parsed = parse_answer(str(row["answer"]), ("yes", "no"))
        return keys[key], {"generate": {"reply": str(row["answer"]), "option": parsed.option, "rule": parsed.rule}}
    return result


def _refuse(config: str | Path, why: str) -> UsageError:
    return UsageError(f"{config}: {why}; rerun it with today's command into a new --out.")


def ask_run_of(spec: RunSpec, config: str | Path = "config.json") -> AskRun:
    """The ask run a retired kind's spec maps to, its model loaded, carrying its :class:`Migration`."""
    from spatialprobe.models.choice import choose

    s, device = spec.settings, str(spec.runtime.get("device", "auto"))
    words = spec.kind == "qa" and bool(s.get("full_vocab"))  # the argmax class's word as a generated reply
    result: Callable[[str, Mapping[str, Any]], tuple[str, dict[str, Any]]]
    if spec.kind == "vsr":
        from spatialprobe.benchmarks.vsr import vsr_source

        source, _ = vsr_source(Path(s["data"]["file"]), Path(s["images"]), s["split"], s["part"], s["limit"],
                               bool(s.get("skip_missing", False)))
        model, result = str(s["model"]), _vsr_result
    elif spec.kind == "spatialmqa":
        from spatialprobe.benchmarks.spatialmqa import LEGACY, LEGACY_PROMPT, spatialmqa_source

        generate = s.get("method") == "generate"
        if generate and (s.get("answerer") or {}).get("prompt", LEGACY_PROMPT) != LEGACY_PROMPT:
            raise _refuse(config, "this spatialmqa run of the generate method asked a prompt of its own (not "
                                  "the kind's default one, which the spatialmqa source's legacy-generate "
                                  "wording asks)")
        source, _ = spatialmqa_source(Path(s["data"]["file"]), Path(s["images"]), s["part"], s["limit"],
                                      bool(s.get("skip_missing", False)), LEGACY if generate else None)
        model = str(s["model"])
        result = (_mqa_generate_result({item.key: item.options for item in source.items}) if generate
                  else _mqa_result)
    elif spec.kind == "qa":
        from spatialprobe.benchmarks.qa import qa_source

        asked = s["questions"]["source"]
        if s.get("mode") not in ("text", "image") or "given" in asked:
            raise _refuse(config, "only QA runs of questions read from a task, a file or an image run's own "
                                  "prompts map to the ask kind (questions given in memory cannot be read again)")
        if s["mode"] == "image":
            images = s.get("images") or {}
            partial = bool((images.get("completeness") or {}).get("partial"))
            own = asked.get("images") is True  # the image run's own prompts
            source, _ = qa_source(None if own else asked.get("task"), None if own else asked.get("data"),
                                  str(images.get("path")), partial, vote=True, words=words)
            keys = _image_keys(source, str(images.get("path")), partial)
            result = _image_qa_word(keys) if words else _image_qa_result(keys)
        else:
            source, _ = qa_source(asked.get("task"), asked.get("data"))
            result = _qa_result
        model = str(s["answerer"]["args"]["model"])
    else:
        raise UsageError(f"{config}: a {spec.kind} run is not one of the retired kinds {', '.join(RETIRED)}.")
    generate = (spec.kind == "spatialmqa" and s.get("method") == "generate") or words
    if spec.kind == "qa":  # the answerer it recorded, with the arguments that changed its answers
        component = Component(str(s["answerer"]["name"]), dict(s["answerer"]["args"]))
    elif generate:  # the adapter the old generate method asked, by greedy decoding
        component = Component("generate", {"model": model})
    else:  # the adapter that scores the contrastive wording, chosen as the ask commands choose
        component = Component(choose(model, ("contrastive",), spec.kind)[0], {"model": model})
    batch_size = int(spec.runtime.get("batch_size", 8))
    text_qa = spec.kind == "qa" and s.get("mode") == "text"
    tokens = int(((s.get("answerer") or {}).get("decoding") or {}).get("max_new_tokens", 16))
    run = AskRun.of(source, None, component, dict(source.settings), protocol="generate" if generate else "likelihood",
                    device=device, batch_size=batch_size, condition="none" if text_qa else "real",
                    max_new_tokens=tokens)
    wanted = "short" if spec.kind == "qa" else "question" if generate else "contrastive"
    if run.wording != wanted:
        raise _refuse(config, f"the {component.name} model is asked {source.name} items in the {run.wording} "
                              f"wording, not the {wanted} one the {spec.kind} run used")
    run.migration = Migration(spec.kind, spec.identity, result)
    return run


def check(config: str | Path, recorded: Mapping[str, Any], rebuilt: RunSpec, out: Path) -> None:
    """Refuse a migration that would not mean what the old config says: an edited config, or, in
    the folder itself, models or files changed since (their cached results are of the old ones)."""
    from spatialprobe.runner.replay import is_new_folder

    if not same_identity(dict(recorded), RunSpec.from_dict(dict(recorded))):
        raise UsageError(f"{config}: this {recorded.get('kind')} run's settings were edited since it ran; "
                         "a retired kind's config is migrated only as it was written.")
    before = sorted(map(str, fingerprints(dict(recorded.get("inputs") or {})).values()))
    after = sorted(map(str, fingerprints(rebuilt.inputs).values()))
    if before != after and not is_new_folder(out):
        raise UsageError(f"{config}: its models or files changed since the {recorded.get('kind')} run; its results "
                         "are of the old ones: replay it into a new --out directory.")


class Retired:
    """What the registry names for each retired run kind: its config rebuilds an ask run."""

    Settings = AskRunSettings
    """The runtime settings a replay may override are the ask kind's (device, batch size, ...)."""

    @classmethod
    def from_spec(cls, spec: RunSpec, source: str | Path = "config.json") -> AskRun:
        return ask_run_of(spec, source)
