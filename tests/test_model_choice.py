"""Choosing a model adapter from the checkpoint's configuration (never its name), and the options
each adapter declares (``--scorer-arg key=value``) checked against that declaration."""

import json

import pytest
from mlm_helpers import tiny_wordpiece_bert
from typer.testing import CliRunner
from vl_helpers import tiny_vilt

from spatialprobe.cli import app
from spatialprobe.errors import UsageError
from spatialprobe.models import options
from spatialprobe.models.choice import adapters_for, auto_model, auto_scorer
from spatialprobe.probing.run import ProbeSettings, scorer_spec


def test_auto_reads_the_config_never_the_name(tmp_path):
    vilt = tiny_vilt(tmp_path / "bert-thing")
    assert auto_scorer(str(vilt))[0] == "vilt"
    bert = tiny_wordpiece_bert(tmp_path / "vilt-x")
    assert auto_scorer(str(bert)) == ("hf-mlm", f"architecture BertForMaskedLM in {bert}/config.json")
    assert auto_scorer("nobody/vilt-not-cached") == (
        "hf-mlm", "no readable configuration (the configuration of 'nobody/vilt-not-cached' is "
        "neither local nor in the Hugging Face cache); fell back to the hf-mlm scorer")


@pytest.mark.parametrize("config,adapters", [
    ({"model_type": "vilt", "architectures": ["ViltForQuestionAnswering"]}, ["vilt-vqa", "vilt"]),
    ({"model_type": "vilt", "architectures": ["ViltForMaskedLM"]}, ["vilt", "vilt-vqa"]),
    ({"model_type": "blip", "architectures": ["BlipForQuestionAnswering"]}, ["blip", "hf-mllm", "generate"]),
    ({"model_type": "clip", "architectures": ["CLIPModel"]}, ["contrastive"]),
    ({"model_type": "siglip"}, ["contrastive"]),
    ({"model_type": "llava", "architectures": ["LlavaForConditionalGeneration"]}, ["hf-mllm", "generate"]),
    ({"model_type": "t5", "architectures": ["T5ForConditionalGeneration"]}, ["t5"]),
    ({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]}, ["hf-causal"]),
    ({"model_type": "bert", "architectures": ["BertForMaskedLM"]}, ["hf-mlm"]),
])
def test_adapters_follow_model_type_and_architectures(config, adapters):
    assert adapters_for(config) == adapters


def test_a_command_refuses_a_model_it_does_not_take_in_one_sentence(tmp_path):
    folder = tmp_path / "vilt-vqa"  # the name says ViLT; the config says CLIP
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "clip", "architectures": ["CLIPModel"]}))
    with pytest.raises(UsageError) as err:
        auto_model(str(folder), ("vilt-vqa", "blip"), "qa image")
    assert str(err.value) == (f"qa image does not take {str(folder)!r}: it is a 'clip' checkpoint "
                              "(architectures CLIPModel), which the contrastive adapter(s) load; "
                              "qa image takes vilt-vqa, blip.")
    (folder / "config.json").write_text(json.dumps({"model_type": "vilt",
                                                     "architectures": ["ViltForMaskedLM"]}))
    assert auto_model(str(folder), ("vilt-vqa", "blip"), "qa image") == (
        "vilt-vqa", f"model_type 'vilt' in {folder}/config.json")


def test_options_are_read_and_checked_against_the_declaration():
    assert options.resolve("hf-causal", {"normalize": "char"}) == {"normalize": "char", "format": "plain"}
    assert options.resolve("t5", {"use_context": "false"}) == {"use_context": False, "lowercase": True}
    assert options.resolve("generate", {"max_new_tokens": "4"})["max_new_tokens"] == 4
    cases = [
        ("hf-causal", {"normalise": "char"}, "the hf-causal model takes no option 'normalise'; its options: "
         "normalize (sum|token|char, default sum), format (plain|chat, default plain)."),
        ("hf-causal", {"normalize": "mean"}, "the hf-causal model's option normalize is one of sum, token, "
         "char, not 'mean'."),
        ("generate", {"max_new_tokens": "many"}, "the generate model's option max_new_tokens takes a int, "
         "not 'many'; its options: prompt (default You are an expert in spatia...), "
         "max_new_tokens (default 16)."),
        ("t5", {"lowercase": "maybe"}, "the t5 model's option lowercase is true or false, not 'maybe'."),
        ("hf-mlm", {"image": "blank"}, "the hf-mlm model takes no option 'image'; its options: none."),
    ]
    for name, given, message in cases:
        with pytest.raises(UsageError) as err:
            options.resolve(name, given)
        assert str(err.value) == message
    with pytest.raises(UsageError, match=r"^--scorer-arg takes key=value, not 'normalize'\.$"):
        options.parse_pairs(["normalize"])
    assert options.parse_pairs(["normalize=char", "image=a=b"]) == {"normalize": "char", "image": "a=b"}


def test_probe_scorer_specs_are_todays_and_the_old_flags_are_aliases(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runtime = {"model": "m", "device": "auto", "batch_size": 64}
    assert scorer_spec(ProbeSettings(model="m"), "hf-mlm").args == runtime
    assert scorer_spec(ProbeSettings(model="m"), "hf-causal").args == {**runtime, "normalize": "sum",
                                                                       "format": "plain"}
    assert scorer_spec(ProbeSettings(model="m"), "vilt").args == {**runtime, "image": "blank"}
    assert scorer_spec(ProbeSettings(model="dummy", seed=3), "dummy").args == {"seed": 3}
    by_flag = scorer_spec(ProbeSettings(model="m", normalize="char"), "hf-causal")
    assert by_flag == scorer_spec(ProbeSettings(model="m", scorer_args={"normalize": "char"}), "hf-causal")
    run = scorer_spec(ProbeSettings(model="m", scorer_args={"image": "synth"}), "vilt")
    assert run.args["image"] == str(tmp_path / "synth")  # a run directory is recorded absolute
    with pytest.raises(ValueError) as err:
        scorer_spec(ProbeSettings(model="m", image="blank"), "hf-mlm")
    assert str(err.value) == "--image applies to the vilt scorer only; the hf-mlm scorer's options: none."


def test_cli_refuses_an_undeclared_scorer_arg_in_one_sentence(tmp_path):
    runner = CliRunner()
    result = runner.invoke(app, ["probe", "size", "--model", "dummy", "--out", str(tmp_path / "a"),
                                 "--scorer-arg", "temperature=2"])
    assert result.exit_code == 2
    assert "Error: the dummy model takes no option 'temperature'; its options: seed (default 0)." in result.output
    assert not (tmp_path / "a" / "summary.json").exists()
    result = runner.invoke(app, ["probe", "size", "--model", "dummy", "--out", str(tmp_path / "b"),
                                 "--scorer-arg", "temperature"])
    assert result.exit_code == 2 and "Error: --scorer-arg takes key=value, not 'temperature'." in result.output
    bert = tiny_wordpiece_bert(tmp_path / "bert")
    result = runner.invoke(app, ["probe", "size", "--model", str(bert), "--out", str(tmp_path / "c"),
                                 "--scorer-arg", "normalize=char"])
    assert result.exit_code == 2
    assert "Error: the hf-mlm model takes no option 'normalize'; its options: none." in result.output
    # the adapter is chosen from config.json, then its options are checked: nothing is loaded
    (tmp_path / "t5").mkdir()
    (tmp_path / "t5" / "config.json").write_text(json.dumps({"model_type": "t5",
                                                             "architectures": ["T5ForConditionalGeneration"]}))
    result = runner.invoke(app, ["qa", "text", "--model", str(tmp_path / "t5"), "--task", "posrel",
                                 "--scorer-arg", "lowercase=maybe"])
    assert result.exit_code == 2
    assert "Error: the t5 model's option lowercase is true or false, not 'maybe'." in result.output


def test_generated_text_is_cut_at_the_first_stop_string():
    from spatialprobe.models.base import cut

    assert cut(" left of\nQuestion: where", ("\n", "Question:")) == "left of"
    assert cut("right of.", ("\n",)) == "right of."
    assert cut(" below ", ()) == "below"


# ---- options that depend on the model refused from config.json, nothing loaded ----
def _config_only(folder, config):
    """A checkpoint folder holding only its config.json: anything that loads from it fails."""
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


@pytest.fixture
def nothing_loads(monkeypatch):
    """Every loader fails the test: the refusal must come from the configuration alone."""
    import transformers

    import spatialprobe.loading

    def loaded(*args, **kwargs):
        raise AssertionError(f"a weight, processor or config loader ran: {args[:2]}")

    monkeypatch.setattr(spatialprobe.loading, "load_pretrained", loaded)
    monkeypatch.setattr(transformers.PreTrainedModel, "from_pretrained", classmethod(loaded))


@pytest.mark.parametrize(("config", "args", "refusal"), [
    ({"model_type": "llava", "architectures": ["LlavaForConditionalGeneration"]}, ["--protocol", "bogus"],
     "--protocol must be one of likelihood, generate, both, not 'bogus'."),
    ({"model_type": "clip", "architectures": ["CLIPModel"]}, ["--protocol", "generate"],
     "the contrastive model cannot answer by --protocol generate (it has no generate); it answers by likelihood."),
    ({"model_type": "llava", "architectures": ["LlavaForConditionalGeneration"]}, ["--scorer-arg", "bogus=1"],
     "the hf-mllm model takes no option 'bogus'"),
])
def test_a_model_dependent_option_is_refused_before_any_weights_load(tmp_path, nothing_loads, config, args,
                                                                     refusal):
    from vl_helpers import solid_image

    (tmp_path / "vsr" / "random").mkdir(parents=True)
    (tmp_path / "vsr" / "random" / "test.jsonl").write_text(json.dumps(
        {"image": "a.jpg", "caption": "The cat is left of the dog.", "label": 1, "relation": "left of"}) + "\n")
    solid_image(tmp_path / "coco" / "a.jpg", (10, 20, 30))
    model = _config_only(tmp_path / "model", config)
    result = CliRunner().invoke(app, ["vsr", "--model", str(model), "--data", str(tmp_path / "vsr"), "--images",
                                      str(tmp_path / "coco"), "--out", str(tmp_path / "run"), *args])
    assert result.exit_code == 2, (result.output, result.exception)
    assert refusal in " ".join(result.output.split()) and not (tmp_path / "run").exists()


def test_probe_refuses_a_bad_protocol_of_a_multimodal_llm_before_it_loads(tmp_path, nothing_loads):
    model = _config_only(tmp_path / "llava", {"model_type": "llava",
                                              "architectures": ["LlavaForConditionalGeneration"]})
    result = CliRunner().invoke(app, ["probe", "size", "--model", str(model), "--protocol", "generat",
                                      "--out", str(tmp_path / "run")])
    assert result.exit_code == 2, (result.output, result.exception)
    assert "--protocol must be one of likelihood, generate, both, not 'generat'." in result.output
