import json

import pytest

from spatialprobe.prompts import templates
from spatialprobe.prompts.backtranslate import backtranslate, round_trip
from spatialprobe.tasks import data as task_data
from spatialprobe.tasks.data import DataError


@pytest.mark.parametrize("task", ["size", "height", "posrel"])
def test_builtin_candidates_are_complete_and_distinct(task):
    ds = task_data.load(task)
    cands = templates.builtin(task)
    assert len(cands.templates) == 10 and len(set(cands.templates)) == 10
    for answers in cands.answer_sets(ds.labels):
        assert len(set(answers)) == len(answers)  # one answer set never maps two labels to one word
    manual = templates.manual(task)
    assert len(manual.configs(ds.labels)) == 1 and manual.answer_sets(ds.labels)[0] == ds.labels


def test_fill_uses_articles_pronouns_and_capitals():
    size = task_data.load("size").instances[0]
    assert templates.fill("Compared to [B], [A] is [MASK].", size) == ("Compared to a bird, an ant is ", ".")
    assert templates.fill("[A] is [MASK] than [B].", size) == ("An ant is ", " than a bird.")
    woman = next(i for i in task_data.load("posrel").instances if i.obj_a == "woman")
    prefix, suffix = templates.fill("[SCENARIO] [PRONOUN] is [MASK] the [OBJECT].", woman)
    assert prefix == f"{woman.text} She is " and suffix == f" the {woman.obj_b}."


def test_candidate_files_are_validated(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"task": "size", "templates": ["[A] is bigger than [B]."],
                                "answers": {"larger": ["larger"], "smaller": ["smaller"]}}))
    with pytest.raises(DataError, match=r"templates\[0\].*\[MASK\]"):
        templates.resolve(str(path), "size")
    path.write_text(json.dumps({"task": "size", "templates": ["[A] is [MASK] than [B]."],
                                "answers": {"larger": ["bigger", "huger"], "smaller": ["smaller"]}}))
    cands = templates.resolve(str(path), "size")
    assert cands.answer_sets(("larger", "smaller")) == [("bigger", "smaller"), ("huger", "smaller")]
    with pytest.raises(DataError, match="holds candidates for 'size'"):
        templates.resolve(str(path), "height")


class DictTranslator:
    """A fake n-best translator: a dictionary of outputs per input."""

    def __init__(self, table):
        self.table = table

    def translate(self, texts, n):
        return [self.table.get(t, [t])[:n] for t in texts]


def test_backtranslation_keeps_placeholders_and_drops_broken_candidates():
    ds = task_data.load("size")
    forward = DictTranslator({"An ant is smaller than a bird.": ["Eine Ameise ist kleiner als ein Vogel.",
                                                                 "Ameise kleiner Vogel."],
                              "An ant is larger than a bird.": ["Eine Ameise ist größer als ein Vogel."],
                              "smaller": ["kleiner"], "larger": ["größer"]})
    backward = DictTranslator({
        "Eine Ameise ist kleiner als ein Vogel.": ["An ant is smaller than a bird.",
                                                   "An ant is much smaller than a bird.",
                                                   "An ant is tinier than a bird."],
        "Ameise kleiner Vogel.": ["Ant smaller bird.", "An ant is usually smaller than a bird."],
        "Eine Ameise ist größer als ein Vogel.": ["An ant is bigger than a bird.", "An ant is larger than a bird."],
        "kleiner": ["smaller", "less", "tiny ones"], "größer": ["larger", "bigger", "greater"]})
    result = backtranslate(ds, forward, backward, n=10)
    assert result.templates == ("[A] is [MASK] than [B].", "[A] is much [MASK] than [B].",
                                "[A] is usually [MASK] than [B].")
    assert result.answers["smaller"] == ("smaller", "tinier", "less")  # "tiny ones" is two words
    assert result.answers["larger"] == ("larger", "bigger", "greater")
    assert round_trip(["x"], forward, backward, 3) == [["x"]]


def test_fsmt_translator_loads_through_the_public_path(tmp_path):
    """A tiny FSMT model and tokenizer, saved and loaded like facebook/wmt19-en-de."""
    import torch
    from transformers import FSMTConfig, FSMTForConditionalGeneration

    from spatialprobe.prompts.backtranslate import FSMTTranslator

    words = ["an</w>", "ant</w>", "is</w>", "smaller</w>", "than</w>", "a</w>", "bird</w>", ".</w>"]
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, **{w: i + 4 for i, w in enumerate(words)}}
    for name in ("vocab-src.json", "vocab-tgt.json"):
        (tmp_path / name).write_text(json.dumps(vocab))
    (tmp_path / "merges.txt").write_text("")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(
        {"langs": ["en", "de"], "model_max_length": 64, "tokenizer_class": "FSMTTokenizer"}))
    torch.manual_seed(0)
    config = FSMTConfig(langs=["en", "de"], src_vocab_size=len(vocab), tgt_vocab_size=len(vocab), d_model=16,
                        encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2,
                        encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=64)
    FSMTForConditionalGeneration(config).save_pretrained(tmp_path)
    translator = FSMTTranslator(str(tmp_path), device="cpu", max_new_tokens=5)
    out = translator.translate(["an ant is smaller than a bird ."], n=3)
    assert len(out) == 1 and len(out[0]) == 3 and all(isinstance(t, str) for t in out[0])
