"""Builders for judge tests: image runs of colour-coded scenes written through ImageStore."""

from __future__ import annotations

from pathlib import Path

from spatialprobe.detectors.colour import draw_scene
from spatialprobe.imagestore import ImageStore, PromptItem
from spatialprobe.tasks import data as task_data

NEAR, FAR = 1.0, 64 / 255  # disparities: depth 1 and depth 255/64 = 3.98


def scene(task: str, a: str, b: str, answer: str, recognized: bool = True):
    """Objects of a 64x64 scene in which the rules must answer ``answer`` for A relative to B.

    size/height scenes only come out right when disparity is converted to depth: the object
    that the rule must call bigger has the *smaller* box but lies farther away.
    """
    if task == "size":
        small_far, big_near = ((4, 4, 14, 14), FAR), ((30, 30, 50, 50), NEAR)
        pa, pb = (small_far, big_near) if answer == "larger" else (big_near, small_far)
    elif task == "height":
        short_far, tall_near = ((4, 4, 10, 24), FAR), ((30, 4, 36, 34), NEAR)
        pa, pb = (short_far, tall_near) if answer == "taller" else (tall_near, short_far)
    else:
        b_box = (22, 22, 42, 42)
        a_box = {"above": (28, 4, 36, 12), "below": (28, 52, 36, 60), "beside": (4, 28, 12, 36),
                 "inside": (28, 28, 36, 36)}[answer]
        pa, pb = (a_box, NEAR), (b_box, NEAR)
    objects = [(b, pb[0], pb[1])] if recognized else []
    objects.append((a, pa[0], pa[1]))  # A painted last: inside scenes keep B's outline around it
    return draw_scene(objects)


def instances(task: str, golds: list[str]) -> list[dict]:
    """One dataset instance dict per wanted gold label, in order, all different instances."""
    pool = list(task_data.load(task).instances)
    out, used = [], set()
    for gold in golds:
        inst = next(i for i in pool if i.label == gold and i.id not in used)
        used.add(inst.id)
        out.append(inst.to_dict())
    return out


def dataset_id(task: str) -> str:
    ds = task_data.load(task)
    return f"{ds.name}@{ds.version}"


def write_run(path: Path, task: str, plan: list[tuple[str, str, bool]]) -> list[dict]:
    """An image run with one image per (gold, drawn answer, recognized) triple; returns the metas."""
    store = ImageStore(path)
    # As `spatialprobe synthesize` records it: the prompts' source is the dataset name@version.
    store.run.start({"kind": "synthesize", "prompts": dataset_id(task), "task": task})
    metas = instances(task, [g for g, _, _ in plan])
    store.add_prompts(PromptItem(m["id"], m["text"], m) for m in metas)
    for meta, (_, answer, recognized) in zip(metas, plan, strict=True):
        image = scene(task, meta["obj_a"], meta["obj_b"], answer, recognized)
        store.save_image(image, meta["id"], 0, seed=0, backend="test", model="drawn-shapes",
                         settings={"drawn": answer})
    return metas


# ---- tiny transformers models, saved and loaded through the public from_pretrained path --------

def tiny_owlvit(path: Path, version: int = 1, cell_boxes: bool = False) -> Path:
    """A 1-layer OWL-ViT (``version=2``: OWLv2), hidden 16, 32x32 inputs, 16-px patches: 4 boxes.

    ``cell_boxes=True`` zeroes the box head's last layer, so each patch predicts exactly the
    model's built-in box bias: centre at the patch's grid corner ((col+1)/2, (row+1)/2) and size
    1/2 of the (padded, for OWLv2) image - a known answer for the box scaling.
    """
    import json
    import string

    import torch
    import transformers as T

    names = ({"config": "OwlViTConfig", "model": "OwlViTForObjectDetection",
              "images": "OwlViTImageProcessor", "processor": "OwlViTProcessor"} if version == 1 else
             {"config": "Owlv2Config", "model": "Owlv2ForObjectDetection",
              "images": "Owlv2ImageProcessor", "processor": "Owlv2Processor"})
    path.mkdir(parents=True, exist_ok=True)
    vocab = {"!": 0, "<|startoftext|>": 1, "<|endoftext|>": 2}
    for c in list(string.ascii_lowercase) + [c + "</w>" for c in string.ascii_lowercase]:
        vocab[c] = len(vocab)
    (path / "vocab.json").write_text(json.dumps(vocab))
    (path / "merges.txt").write_text("#version: 0.2\n")
    tokenizer = T.CLIPTokenizer(str(path / "vocab.json"), str(path / "merges.txt"), pad_token="!",
                                model_max_length=16)
    config = getattr(T, names["config"])(
        text_config={"vocab_size": len(vocab), "hidden_size": 16, "intermediate_size": 32,
                     "num_hidden_layers": 1, "num_attention_heads": 2, "max_position_embeddings": 16,
                     "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0},
        vision_config={"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
                       "num_attention_heads": 2, "image_size": 32, "patch_size": 16},
        projection_dim=16)
    torch.manual_seed(0)
    model = getattr(T, names["model"])(config)
    if cell_boxes:
        with torch.no_grad():
            model.box_head.dense2.weight.zero_()
            model.box_head.dense2.bias.zero_()
    model.save_pretrained(path)
    size = {"height": 32, "width": 32}
    images = (T.OwlViTImageProcessor(size=size, crop_size=size) if version == 1
              else T.Owlv2ImageProcessor(size=size))
    getattr(T, names["processor"])(image_processor=images, tokenizer=tokenizer).save_pretrained(path)
    return path


def tiny_dpt(path: Path, disparity: float = 4.0) -> Path:
    """A 2-layer DPT whose head predicts the constant ``disparity`` everywhere."""
    import torch
    from transformers import DPTConfig, DPTForDepthEstimation, DPTImageProcessor

    config = DPTConfig(image_size=32, patch_size=16, hidden_size=16, num_hidden_layers=2,
                       num_attention_heads=2, intermediate_size=32, backbone_out_indices=[0, 1],
                       neck_hidden_sizes=[8, 16], reassemble_factors=[2, 1], fusion_hidden_size=16)
    torch.manual_seed(0)
    model = DPTForDepthEstimation(config)
    with torch.no_grad():  # last conv of the head -> ReLU: output = ReLU(bias)
        model.head.head[4].weight.zero_()
        model.head.head[4].bias.fill_(disparity)
    model.save_pretrained(path)
    DPTImageProcessor(size={"height": 32, "width": 32}, keep_aspect_ratio=False).save_pretrained(path)
    return path


def tiny_depth_anything_metric(path: Path, max_depth: int = 20) -> Path:
    """A 2-layer metric Depth Anything predicting sigmoid(0) * max_depth = max_depth / 2."""
    import torch
    from transformers import DepthAnythingConfig, DepthAnythingForDepthEstimation, Dinov2Config, DPTImageProcessor

    backbone = Dinov2Config(image_size=28, patch_size=14, hidden_size=16, num_hidden_layers=2,
                            num_attention_heads=2, intermediate_size=32,
                            out_features=["stage1", "stage2"], reshape_hidden_states=False)
    config = DepthAnythingConfig(backbone_config=backbone, reassemble_hidden_size=16,
                                 neck_hidden_sizes=[8, 16], reassemble_factors=[2, 1],
                                 fusion_hidden_size=16, head_hidden_size=8,
                                 depth_estimation_type="metric", max_depth=max_depth)
    torch.manual_seed(0)
    model = DepthAnythingForDepthEstimation(config)
    with torch.no_grad():
        model.head.conv3.weight.zero_()
        model.head.conv3.bias.zero_()
    model.save_pretrained(path)
    DPTImageProcessor(size={"height": 28, "width": 28}, keep_aspect_ratio=False,
                      ensure_multiple_of=14).save_pretrained(path)
    return path


def tiny_detr(path: Path, predicted_class: int = 1) -> Path:
    """A 1-layer DETR (ResNet backbone from transformers) that predicts ``predicted_class``
    for all 3 queries; classes 0 person, 1 tire, 2 cup."""
    import torch
    from transformers import DetrConfig, DetrForObjectDetection, DetrImageProcessor, ResNetConfig

    backbone = ResNetConfig(num_channels=3, embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1],
                            layer_type="basic", out_features=["stage1", "stage2"])
    id2label = {0: "person", 1: "tire", 2: "cup"}
    config = DetrConfig(use_timm_backbone=False, backbone_config=backbone,
                        use_pretrained_backbone=False, num_queries=3, d_model=16, encoder_layers=1,
                        decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2,
                        encoder_ffn_dim=32, decoder_ffn_dim=32, id2label=id2label,
                        label2id={v: k for k, v in id2label.items()})
    torch.manual_seed(0)
    model = DetrForObjectDetection(config)
    with torch.no_grad():
        model.class_labels_classifier.weight.zero_()
        bias = torch.full((4,), -10.0)
        bias[predicted_class] = 10.0
        model.class_labels_classifier.bias.copy_(bias)
    model.save_pretrained(path)
    DetrImageProcessor(size={"shortest_edge": 32, "longest_edge": 32}).save_pretrained(path)
    return path
