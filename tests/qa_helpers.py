"""Tiny QA models built from scratch (no download): a T5 with a word-level tokenizer, a ViLT-VQA."""

from __future__ import annotations

import re
from pathlib import Path

SPECIALS = ["<pad>", "</s>", "<unk>"]


def _bert_tokenizer(words: list[str], path: Path, **special):
    """A BERT word-piece tokenizer over ``words`` (transformers 5 takes a dict, 4.x a vocab file)."""
    import inspect

    from transformers import BertTokenizerFast

    if "vocab" in inspect.signature(BertTokenizerFast.__init__).parameters:
        return BertTokenizerFast(vocab={w: i for i, w in enumerate(words)}, do_lower_case=True, **special)
    (path / "vocab.txt").write_text("\n".join(words) + "\n")
    return BertTokenizerFast(vocab_file=str(path / "vocab.txt"), do_lower_case=True, **special)


def _words(texts) -> list[str]:
    found = set()
    for text in texts:
        found.update(re.findall(r"\w+|[^\w\s]", text.lower()))
    return sorted(found)


def make_t5(path: Path, texts, d_model: int = 32, seed: int = 0) -> Path:
    """A 1-layer T5 whose word-level tokenizer knows every word of ``texts`` plus yes/no."""
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

    vocab = {w: i for i, w in enumerate(SPECIALS + [w for w in _words([*texts, "yes no \\n"])
                                                    if w not in SPECIALS])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="</s>",
                                   unk_token="<unk>")
    torch.manual_seed(seed)
    config = T5Config(vocab_size=len(vocab), d_model=d_model, d_kv=8, d_ff=2 * d_model, num_layers=1,
                      num_decoder_layers=1, num_heads=4, decoder_start_token_id=0, pad_token_id=0,
                      eos_token_id=1, dropout_rate=0.0)
    model = T5ForConditionalGeneration(config)
    fast.save_pretrained(path)
    model.save_pretrained(path)
    return path


def train_t5(path: Path, inputs: list[str], answers: list[str], steps: int = 80) -> Path:
    """Fit the tiny T5 to map each input to its answer (memorization), then save it in place."""
    import torch
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForSeq2SeqLM.from_pretrained(path)
    enc = tok(inputs, padding=True, return_tensors="pt")
    labels = tok(answers, padding=True, return_tensors="pt").input_ids
    optim = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(steps):
        loss = model(**enc, labels=labels).loss
        optim.zero_grad()
        loss.backward()
        optim.step()
    model.eval()
    model.save_pretrained(path)
    return path


def make_vilt(path: Path, texts, answer_bias: dict[str, float], image_size: int = 32) -> Path:
    """A 1-layer ViLT-VQA whose answer classifier outputs ``answer_bias`` whatever the input."""
    import torch
    from transformers import ViltConfig, ViltForQuestionAnswering, ViltImageProcessor, ViltProcessor

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *_words([*texts, "yes no"])]
    path.mkdir(parents=True, exist_ok=True)
    tokenizer = _bert_tokenizer(words, path)
    image_processor = ViltImageProcessor(size={"shortest_edge": image_size}, size_divisor=16)
    ViltProcessor(image_processor=image_processor, tokenizer=tokenizer).save_pretrained(path)
    labels = list(answer_bias)
    config = ViltConfig(vocab_size=len(words), hidden_size=32, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=64, image_size=image_size,
                        patch_size=16, max_position_embeddings=64, num_labels=len(labels),
                        id2label=dict(enumerate(labels)), label2id={w: i for i, w in enumerate(labels)})
    torch.manual_seed(0)
    model = ViltForQuestionAnswering(config)
    head = model.classifier[-1]
    with torch.no_grad():
        head.weight.zero_()
        head.bias.copy_(torch.tensor([answer_bias[w] for w in labels]))
    model.save_pretrained(path)
    return path


def make_vilt_by_image(path: Path, texts, answers: dict[str, float], pairs) -> Path:
    """A 1-layer ViLT-VQA (:func:`make_vilt`'s, classes ``answers``) whose last classifier layer is
    fitted (least squares, exactly) so that each ``(question, image path, word)`` of ``pairs`` is
    answered ``word`` by a margin of 10 logits: a model whose answer depends on the image. Give only
    the pairs it will be asked: a random ViLT's features vary little with the image, so a fit to
    many pairs needs weights large enough to amplify batching's rounding."""
    import torch
    from PIL import Image
    from transformers import ViltForQuestionAnswering, ViltProcessor

    make_vilt(path, texts, answers)
    processor = ViltProcessor.from_pretrained(path)
    model = ViltForQuestionAnswering.from_pretrained(path).eval()
    head, features = model.classifier[-1], []
    hook = head.register_forward_hook(lambda _m, inputs, _out: features.append(inputs[0][0]))
    with torch.no_grad():
        for question, image, _ in pairs:
            model(**processor(images=[Image.open(image).convert("RGB")], text=[question], return_tensors="pt"))
    hook.remove()
    labels = list(answers)
    x = torch.cat([torch.stack(features), torch.ones(len(pairs), 1)], dim=1).double()  # with the bias
    target = torch.tensor([[10.0 if label == word else 0.0 for label in labels] for _, _, word in pairs]).double()
    solution = torch.linalg.lstsq(x, target, driver="gelsd").solution  # (features + 1) x classes
    with torch.no_grad():
        head.weight.copy_(solution[:-1].T.float())
        head.bias.copy_(solution[-1].float())
    model.save_pretrained(path)
    return path


def make_blip(path: Path, texts, answer_bias: dict[str, float], image_size: int = 32) -> Path:
    """A 1-layer BLIP-VQA whose answer decoder outputs fixed logits: ``answer_bias`` per word."""
    import torch
    from transformers import BlipConfig, BlipForQuestionAnswering, BlipImageProcessor, BlipProcessor

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[DEC]", *_words([*texts, "yes no"])]
    path.mkdir(parents=True, exist_ok=True)
    tokenizer = _bert_tokenizer(words, path, bos_token="[DEC]")  # as in Salesforce/blip-vqa-base
    image_processor = BlipImageProcessor(size={"height": image_size, "width": image_size})
    BlipProcessor(image_processor=image_processor, tokenizer=tokenizer).save_pretrained(path)
    small = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64}
    config = BlipConfig(
        text_config=dict(vocab_size=len(words), bos_token_id=words.index("[DEC]"), pad_token_id=0,
                         sep_token_id=words.index("[SEP]"), eos_token_id=words.index("[SEP]"),
                         encoder_hidden_size=32, max_position_embeddings=64, **small),
        vision_config=dict(image_size=image_size, patch_size=16, **small),
        projection_dim=32)
    torch.manual_seed(0)
    model = BlipForQuestionAnswering(config)
    head = model.text_decoder.cls.predictions
    with torch.no_grad():
        head.decoder.weight.zero_()
        head.bias.zero_()
        for word, value in answer_bias.items():
            head.bias[words.index(word)] = value
    model.save_pretrained(path)
    return path
