"""Tiny QA models built from scratch (no download): a T5 with a word-level tokenizer, a ViLT-VQA."""

from __future__ import annotations

from pathlib import Path


def _words(texts) -> list[str]:
    from spatialprobe.tiny.vocab import words

    return words(texts, toolkit=False)


def make_t5(path: Path, texts, d_model: int = 32, seed: int = 0) -> Path:
    """A 1-layer T5 whose word-level tokenizer knows every word of ``texts`` plus yes/no."""
    from spatialprobe.tiny.text import t5

    return t5(path, texts, d_model, seed, toolkit=False)


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

    from spatialprobe.tiny.image_text import BERT_SPECIALS, vilt

    def fixed_answers(model):
        head = model.classifier[-1]
        with torch.no_grad():
            head.weight.zero_()
            head.bias.copy_(torch.tensor([answer_bias[w] for w in answer_bias]))

    return vilt(path, head="vqa", words=[*BERT_SPECIALS, *_words([*texts, "yes no"])], hidden=32,
                image_size=image_size, max_positions=64, answers=list(answer_bias), pil=False, wire=fixed_answers)


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
    from spatialprobe.tiny.image_text import BERT_SPECIALS, blip_vqa

    words = [*BERT_SPECIALS, "[DEC]", *_words([*texts, "yes no"])]
    return blip_vqa(path, words, image_size=image_size, answer_bias=answer_bias)
