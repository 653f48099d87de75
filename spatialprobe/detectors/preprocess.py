"""The judge's image preprocessing as tensor ops on the model's device, and a prefetching decoder.

:class:`TensorPreprocessor` reproduces what the transformers PIL image processors of OWL-ViT,
DPT / Depth Anything and DETR do - resize, rescale by 1/255, normalise by mean/std, DETR's
bottom-right zero padding with a pixel mask. PIL resizes a uint8 image in two passes with
fixed-point filter weights (22 fraction bits), rounding and clipping to uint8 after each pass.
Here each pass is one matrix product with those same integer weights in float64, where every sum
of integer products is exact, so each pass is PIL's bit for bit on any device;
``torch.nn.functional.interpolate(antialias=True)`` is not (up to 25 grey levels apart on
upscaling, because it does not clip between passes). The order of the passes matters too, and
Pillow 13 runs the vertical one first when the height shrinks much more than the width
(python-pillow/Pillow#9549) by a rule this module only approximates. Measured on 400 random
(size, output size, bilinear/bicubic) draws: 379 bit-exact; 21, all shrinking both sides, differ
(largest difference 1 grey level in 17 of them, in 10-25 % of the pixels; 2, 4 and 21 levels in
the others). So the tensor path is an adapter option (``preprocess="tensor"``), recorded in the
run's identity, and the processor stays the reference (``preprocess="processor"``, the default).
A processor this module cannot reproduce (OWLv2's pad-and-Gaussian resize, centre crops, other
filters, the torchvision backends) gets ``None`` from :func:`tensor_preprocessor` and the adapter
keeps calling the processor itself.

:func:`prefetch` decodes the images of the next batch in background threads (PIL releases the GIL
while it decodes) while the models run on the current one.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from typing import Any, TypeVar

import numpy as np

PRECISION_BITS = 22
"""Fraction bits of PIL's 8-bit resampling weights (``32 - 8 - 2`` in libImaging/Resample.c)."""
FILTERS: dict[int, tuple[float, Callable[[float], float]]] = {
    2: (1.0, lambda x: max(0.0, 1.0 - abs(x))),  # PIL.Image.BILINEAR
    3: (2.0, lambda x: _bicubic(abs(x))),        # PIL.Image.BICUBIC (a = -0.5)
}

T = TypeVar("T")
U = TypeVar("U")


def _bicubic(x: float, a: float = -0.5) -> float:
    if x < 1.0:
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1
    if x < 2.0:
        return (((x - 5) * x + 8) * x - 4) * a
    return 0.0


@lru_cache(maxsize=64)
def pil_weights(in_size: int, out_size: int, resample: int) -> np.ndarray:
    """(out_size, in_size) integer weights of one PIL resampling pass (``precompute_coeffs`` and
    ``normalize_coeffs_8bpc`` of libImaging/Resample.c, in the same double arithmetic)."""
    support, kernel = FILTERS[resample]
    scale = in_size / out_size
    filterscale = max(scale, 1.0)
    support *= filterscale
    weights = np.zeros((out_size, in_size), dtype=np.float64)
    for xx in range(out_size):
        center = (xx + 0.5) * scale
        xmin = max(int(center - support + 0.5), 0)
        xmax = min(int(center + support + 0.5), in_size)
        k = [kernel((x - center + 0.5) / filterscale) for x in range(xmin, xmax)]
        total = sum(k)
        for x, w in zip(range(xmin, xmax), k, strict=True):
            w = w / total if total != 0.0 else w
            weights[xx, x] = int(w * (1 << PRECISION_BITS) + (0.5 if w >= 0 else -0.5))
    return weights


def resize_like_pil(pixels, size: tuple[int, int], resample: int):
    """(N, C, H, W) float64 tensor of uint8 values resized to ``size`` (height, width) exactly as
    ``PIL.Image.resize`` resizes a uint8 image."""
    import torch

    def one_pass(x, weights):  # contracts the last axis; rounds and clips as PIL's clip8
        w = torch.as_tensor(weights, device=x.device)
        acc = x.contiguous() @ w.T + float(1 << (PRECISION_BITS - 1))
        return torch.floor(acc / float(1 << PRECISION_BITS)).clamp_(0, 255)

    def horizontal(x):
        return x if size[1] == x.shape[-1] else one_pass(x, pil_weights(x.shape[-1], size[1], resample))

    def vertical(x):
        if size[0] == x.shape[-2]:
            return x
        return one_pass(x.transpose(-1, -2), pil_weights(x.shape[-2], size[0], resample)).transpose(-1, -2)

    height, width = pixels.shape[-2:]
    # The order matters because each pass rounds and clips. Pillow 13 runs the vertical pass
    # first when the height shrinks much more than the width (python-pillow/Pillow#9549); this
    # approximation of its rule is wrong on a few sizes (see the module doc).
    if height > size[0] and height * size[1] > width * size[0]:
        return horizontal(vertical(pixels))
    return vertical(horizontal(pixels))


class TensorPreprocessor:
    """One image processor's resize/rescale/normalise/pad, run on ``device`` (see module doc)."""

    def __init__(self, processor):
        p = processor
        self.resample = int(p.resample)
        self.size = p.size
        self.scale = float(p.rescale_factor) if p.do_rescale else None
        self.mean = list(p.image_mean) if p.do_normalize else None
        self.std = list(p.image_std) if p.do_normalize else None
        self.pad = bool(getattr(p, "do_pad", False)) and "pixel_mask" in p.model_input_names
        self.keep_aspect_ratio = getattr(p, "keep_aspect_ratio", None)
        self.multiple = getattr(p, "ensure_multiple_of", 1)

    def output_size(self, height: int, width: int) -> tuple[int, int]:
        """The size the processor resizes a (height, width) image to."""
        size = self.size
        if self.keep_aspect_ratio is not None:  # DPT / Depth Anything
            from transformers.models.dpt.image_processing_pil_dpt import get_resize_output_image_size

            out: Any = get_resize_output_image_size(np.empty((0, height, width)), (size.height, size.width),
                                               self.keep_aspect_ratio, self.multiple)
            return int(out.height), int(out.width)
        if size.shortest_edge and size.longest_edge:  # DETR
            from transformers.image_transforms import get_size_with_aspect_ratio

            h, w = get_size_with_aspect_ratio((height, width), size.shortest_edge, size.longest_edge)
            return h, w
        return size.height, size.width

    def __call__(self, images: Sequence[Any], device: str) -> dict[str, Any]:
        """``pixel_values`` (and ``pixel_mask`` for DETR) of RGB PIL images, on ``device``."""
        import torch

        out: list[Any] = [None] * len(images)
        arrays = [np.array(image.convert("RGB")) for image in images]
        for shape in {a.shape for a in arrays}:  # a batch usually shares one size: one resize
            index = [i for i, a in enumerate(arrays) if a.shape == shape]
            pixels = torch.from_numpy(np.stack([arrays[i] for i in index])).to(device, non_blocking=True)
            pixels = resize_like_pil(pixels.permute(0, 3, 1, 2).to(torch.float64),
                                     self.output_size(shape[0], shape[1]), self.resample)
            if self.scale is not None:  # as transformers' rescale: float64 product, then float32
                pixels = (pixels * self.scale).to(torch.float32)
            pixels = pixels.to(torch.float32)
            if self.mean is not None and self.std is not None:
                mean = torch.tensor(self.mean, dtype=torch.float32, device=device)[:, None, None]
                std = torch.tensor(self.std, dtype=torch.float32, device=device)[:, None, None]
                pixels = (pixels - mean) / std
            for i, p in zip(index, pixels, strict=True):
                out[i] = p
        if not self.pad:
            return {"pixel_values": torch.stack(out)}
        height = max(p.shape[1] for p in out)
        width = max(p.shape[2] for p in out)
        values = torch.zeros((len(out), 3, height, width), dtype=torch.float32, device=device)
        mask = torch.zeros((len(out), height, width), dtype=torch.int64, device=device)
        for i, p in enumerate(out):
            values[i, :, :p.shape[1], :p.shape[2]] = p
            mask[i, :p.shape[1], :p.shape[2]] = 1
        return {"pixel_values": values, "pixel_mask": mask}


def tensor_preprocessor(processor) -> TensorPreprocessor | None:
    """A :class:`TensorPreprocessor` reproducing ``processor`` exactly, or None if it cannot."""
    p = getattr(processor, "image_processor", processor)
    name = type(p).__name__
    supported = name in ("OwlViTImageProcessorPil", "DPTImageProcessorPil", "DetrImageProcessorPil")
    if (not supported or not p.do_resize or int(p.resample) not in FILTERS
            or getattr(p, "do_center_crop", False) or getattr(p, "do_reduce_labels", False)
            or (name == "DPTImageProcessorPil" and p.do_pad)
            or (name == "DetrImageProcessorPil" and getattr(p, "pad_size", None))):
        return None
    return TensorPreprocessor(p)


def prefetch(batches: Iterable[Sequence[T]], load: Callable[[T], U], workers: int = 4,
             ahead: int = 1) -> Iterator[tuple[Sequence[T], list[U]]]:
    """(batch, [load(x) for x in batch]) in order, loading the next ``ahead`` batches in
    ``workers`` threads while the caller works on the current one; a load's error is raised when
    its batch is reached."""
    pending: deque[tuple[Sequence[T], list[Any]]] = deque()
    source = iter(batches)
    with ThreadPoolExecutor(max(1, workers)) as pool:
        def submit() -> None:
            batch = next(source, None)
            if batch is not None:
                pending.append((batch, [pool.submit(load, x) for x in batch]))

        for _ in range(ahead + 1):
            submit()
        while pending:
            batch, futures = pending.popleft()
            submit()
            yield batch, [f.result() for f in futures]

