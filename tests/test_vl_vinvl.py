"""VinVL/Oscar checkpoint -> BertForMaskedLM: same masked-LM logits as the original weights."""

from __future__ import annotations

import json
import math

import pytest

torch = pytest.importorskip("torch")

from vl_helpers import SPECIALS, WORDS, tiny_bert_config, write_vocab  # noqa: E402

from spatialprobe.convert.vinvl import CheckpointError, convert_vinvl  # noqa: E402

H, FF, HEADS = 16, 32, 2


def synthetic_oscar_checkpoint(directory, *, old_layernorm_names=True):
    """Random weights under Oscar's BertImgForPreTraining key names, as pytorch_model.bin."""
    g = torch.Generator().manual_seed(1)
    vocab = len(SPECIALS) + len(WORDS)

    def r(*shape):
        return torch.randn(*shape, generator=g) * 0.5

    ln = ("gamma", "beta") if old_layernorm_names else ("weight", "bias")
    sd = {
        "bert.embeddings.word_embeddings.weight": r(vocab, H),
        "bert.embeddings.position_embeddings.weight": r(64, H),
        "bert.embeddings.token_type_embeddings.weight": r(2, H),
        f"bert.embeddings.LayerNorm.{ln[0]}": 1 + r(H) * 0.1,
        f"bert.embeddings.LayerNorm.{ln[1]}": r(H) * 0.1,
        "bert.pooler.dense.weight": r(H, H), "bert.pooler.dense.bias": r(H),
        "bert.img_embedding.weight": r(H, 2054), "bert.img_embedding.bias": r(H),
        "bert.LayerNorm.weight": 1 + r(H) * 0.1, "bert.LayerNorm.bias": r(H) * 0.1,  # img layer norm
        "cls.predictions.bias": r(vocab),
        "cls.predictions.transform.dense.weight": r(H, H),
        "cls.predictions.transform.dense.bias": r(H),
        f"cls.predictions.transform.LayerNorm.{ln[0]}": 1 + r(H) * 0.1,
        f"cls.predictions.transform.LayerNorm.{ln[1]}": r(H) * 0.1,
        "cls.seq_relationship.weight": r(3, H), "cls.seq_relationship.bias": r(3),
    }
    sd["cls.predictions.decoder.weight"] = sd["bert.embeddings.word_embeddings.weight"]
    p = "bert.encoder.layer.0."
    for name, shape in [("attention.self.query", (H, H)), ("attention.self.key", (H, H)),
                        ("attention.self.value", (H, H)), ("attention.output.dense", (H, H)),
                        ("intermediate.dense", (FF, H)), ("output.dense", (H, FF))]:
        sd[p + name + ".weight"] = r(*shape)
        sd[p + name + ".bias"] = r(shape[0])
    for name in ("attention.output.LayerNorm", "output.LayerNorm"):
        sd[p + f"{name}.{ln[0]}"] = 1 + r(H) * 0.1
        sd[p + f"{name}.{ln[1]}"] = r(H) * 0.1
    directory.mkdir(parents=True, exist_ok=True)
    torch.save(sd, directory / "pytorch_model.bin")
    config = tiny_bert_config(vocab) | {"img_feature_dim": 2054, "img_feature_type": "faster_r-cnn",
                                        "num_contrast_classes": 3, "architectures": ["BertImgForPreTraining"]}
    (directory / "config.json").write_text(json.dumps(config))
    write_vocab(directory)
    return {k.replace("gamma", "weight").replace("beta", "bias"): v for k, v in sd.items()}


def layer_norm(x, sd, name):
    return torch.nn.functional.layer_norm(x, (H,), sd[name + ".weight"], sd[name + ".bias"], 1e-12)


def linear(x, sd, name):
    return x @ sd[name + ".weight"].T + sd[name + ".bias"]


def gelu(x):
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


def mlm_logits_by_hand(sd, ids):
    """BERT forward pass written out from the original weights (one layer, no padding)."""
    n = len(ids)
    x = (sd["bert.embeddings.word_embeddings.weight"][ids]
         + sd["bert.embeddings.position_embeddings.weight"][:n]
         + sd["bert.embeddings.token_type_embeddings.weight"][0])
    x = layer_norm(x, sd, "bert.embeddings.LayerNorm")
    p = "bert.encoder.layer.0."
    d = H // HEADS
    q, k, v = (linear(x, sd, p + f"attention.self.{m}").view(n, HEADS, d).transpose(0, 1)
               for m in ("query", "key", "value"))
    attn = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(d), dim=-1) @ v
    attn = attn.transpose(0, 1).reshape(n, H)
    x = layer_norm(linear(attn, sd, p + "attention.output.dense") + x, sd, p + "attention.output.LayerNorm")
    ff = linear(gelu(linear(x, sd, p + "intermediate.dense")), sd, p + "output.dense")
    x = layer_norm(ff + x, sd, p + "output.LayerNorm")
    t = layer_norm(gelu(linear(x, sd, "cls.predictions.transform.dense")), sd,
                   "cls.predictions.transform.LayerNorm")
    return t @ sd["cls.predictions.decoder.weight"].T + sd["cls.predictions.bias"]


def test_converted_logits_equal_hand_computed(tmp_path):
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    sd = synthetic_oscar_checkpoint(tmp_path / "ckpt")
    record = convert_vinvl(tmp_path / "ckpt", tmp_path / "out")
    model = AutoModelForMaskedLM.from_pretrained(tmp_path / "out").eval()
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "out")
    ids = tokenizer("An ant is [MASK] than a bird.")["input_ids"]
    assert tokenizer.convert_ids_to_tokens(ids)[:4] == ["[CLS]", "an", "ant", "is"]
    assert tokenizer.model_max_length == 64  # max_position_embeddings, not "unlimited"
    with torch.no_grad():
        got = model(input_ids=torch.tensor([ids])).logits[0]
    expected = mlm_logits_by_hand(sd, torch.tensor(ids))
    assert got.shape == (len(ids), len(SPECIALS) + len(WORDS))
    torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)
    assert record["image_embedding"] == ["bert.LayerNorm.bias", "bert.LayerNorm.weight",
                                         "bert.img_embedding.bias", "bert.img_embedding.weight"]
    assert record["oscar_config"]["img_feature_dim"] == 2054


def test_image_embedding_and_heads_kept_beside_model(tmp_path):
    from safetensors.torch import load_file

    sd = synthetic_oscar_checkpoint(tmp_path / "ckpt", old_layernorm_names=False)
    convert_vinvl(tmp_path / "ckpt", tmp_path / "out")
    image = load_file(str(tmp_path / "out" / "img_embedding.safetensors"))
    torch.testing.assert_close(image["bert.img_embedding.weight"], sd["bert.img_embedding.weight"])
    heads = load_file(str(tmp_path / "out" / "pretraining_heads.safetensors"))
    assert set(heads) == {"bert.pooler.dense.weight", "bert.pooler.dense.bias",
                          "cls.seq_relationship.weight", "cls.seq_relationship.bias"}
    config = json.loads((tmp_path / "out" / "config.json").read_text())
    assert config["architectures"] == ["BertForMaskedLM"] and "img_feature_dim" not in config


def test_checkpoint_without_weights_or_mlm_head_is_refused(tmp_path):
    write_vocab(tmp_path / "empty")
    with pytest.raises(CheckpointError, match=r"pytorch_model\.bin"):
        convert_vinvl(tmp_path / "empty", tmp_path / "out")
    synthetic_oscar_checkpoint(tmp_path / "ckpt")
    sd = torch.load(tmp_path / "ckpt" / "pytorch_model.bin", weights_only=True)
    torch.save({k: v for k, v in sd.items() if not k.startswith("cls.predictions")},
               tmp_path / "ckpt" / "pytorch_model.bin")
    with pytest.raises(CheckpointError, match="masked-LM head"):
        convert_vinvl(tmp_path / "ckpt", tmp_path / "out2")


def test_convert_command(tmp_path):
    from typer.testing import CliRunner

    from spatialprobe.cli import app

    synthetic_oscar_checkpoint(tmp_path / "ckpt")
    result = CliRunner().invoke(app, ["convert", "vinvl", str(tmp_path / "ckpt"), str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "vocab.txt").exists() and (tmp_path / "out" / "vinvl.json").exists()
    bad = CliRunner().invoke(app, ["convert", "vinvl", str(tmp_path / "nothing"), str(tmp_path / "o")],
                             env={"COLUMNS": "400"})  # rich's error panel wraps no word of a long path
    assert bad.exit_code != 0 and "vocab.txt" in bad.output


def test_converted_directory_scores_through_the_masked_lm_prober(tmp_path):
    """The converted directory goes through the generic "hf-mlm" scorer (``probe --model OUT``)."""
    from spatialprobe import registry
    from spatialprobe.models.base import ScoreRequest

    sd = synthetic_oscar_checkpoint(tmp_path / "ckpt")
    convert_vinvl(tmp_path / "ckpt", tmp_path / "out")
    scorer = registry.lookup("model", "hf-mlm")(str(tmp_path / "out"))
    got = scorer.score([ScoreRequest("An ant is", " than a bird.", ("larger", "smaller"))])[0]
    vocab = SPECIALS + WORDS
    ids = [vocab.index(t) for t in ("[CLS]", "an", "ant", "is", "[MASK]", "than", "a", "bird", ".", "[SEP]")]
    log_probs = mlm_logits_by_hand(sd, torch.tensor(ids))[4].log_softmax(-1)
    expected = (log_probs[vocab.index("larger")].item(), log_probs[vocab.index("smaller")].item())
    assert got == pytest.approx(expected, abs=1e-4)
