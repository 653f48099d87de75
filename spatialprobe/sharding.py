"""Models larger than one device: ``--device-map auto`` and ``--max-memory DEVICE=SIZE``.

accelerate's ``device_map="auto"`` (through ``from_pretrained``) puts a checkpoint's layers on
every visible GPU in turn, then on the CPU, then on the disk, each device holding at most its
``--max-memory``; hooks move the activations from device to device during the forward pass, and
layers kept on the CPU or the disk are brought to the first GPU when they run. Where a model runs
is not what it computes: both settings are runtime (:data:`spatialprobe.runner.spec.RUNTIME_KEYS`),
never part of a run's identity, and the scores agree with the model on one device up to float
rounding (docs/device-map.md gives the measured bound).

Which adapters take them is said by the adapter class (``shards = True``:
:func:`spatialprobe.models.options.sharding` checks and refuses); this module loads and places.
accelerate is the ``multigpu`` extra.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import weakref
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from spatialprobe.errors import ModelLoadError, UsageError

DEVICE_MAPS = ("auto",)
"""What ``--device-map`` takes (off unless given)."""
EXTRA, FEATURE = "multigpu", "--device-map (a model spread over several devices)"
UNITS = {"gib": "GiB", "mib": "MiB", "kib": "KiB", "gb": "GB", "mb": "MB", "kb": "KB"}
"""The size units accelerate reads (``GiB``: 2**30 bytes, ``GB``: 10**9); a bare number is bytes."""
_SIZE = re.compile(r"^(\d+(?:\.\d+)?)\s*([a-z]*)$", re.IGNORECASE)


def parse_max_memory(pairs: Sequence[str]) -> dict[str, str]:
    """``["0=70GiB", "cpu=200GiB"]`` -> ``{"0": "70GiB", "cpu": "200GiB"}`` (keys: a GPU index or
    ``cpu``; sizes with their unit spelled as accelerate reads it), or one sentence."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = (part.strip() for part in pair.partition("="))
        key = key.lower()
        if not sep or not (key.isdigit() or key == "cpu"):
            raise UsageError(f"--max-memory takes DEVICE=SIZE with DEVICE a GPU index (0, 1, ...) or cpu, "
                             f"not {pair!r}.")
        size = _SIZE.match(value)
        if size is None or (size.group(2) and size.group(2).lower() not in UNITS) \
                or (not size.group(2) and "." in size.group(1)):
            raise UsageError(f"--max-memory {pair}: the size is a number of bytes or a number with one of "
                             f"the units {', '.join(UNITS.values())} (70GiB, 500MB), not {value!r}.")
        key = str(int(key)) if key.isdigit() else key
        if key in out:
            raise UsageError(f"--max-memory names device {key} twice.")
        out[key] = size.group(1) + UNITS.get(size.group(2).lower(), "")
    return out


def accelerate_memory(max_memory: Mapping[str, str]) -> dict[int | str, int | str]:
    """The recorded ``--max-memory`` as ``from_pretrained`` takes it: GPU indices as integers,
    bare byte counts as integers."""
    return {(int(k) if k.isdigit() else k): (int(v) if v.isdigit() else v) for k, v in max_memory.items()}


def check_gpus(max_memory: Mapping[str, str]) -> None:
    """Refuse, in one sentence, a ``--max-memory`` for a GPU this process cannot see (accelerate
    would warn and then fail deep inside the load). Checked where the model loads: a Ray worker
    counts its own GPUs."""
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    missing = next((key for key in max_memory if key.isdigit() and int(key) >= count), None)
    if missing is None:
        return
    have = f"GPUs {', '.join(map(str, range(count)))} only" if count else "no GPU"
    raise UsageError(f"--max-memory {missing}={max_memory[missing]}: this machine has {have} (as "
                     "CUDA_VISIBLE_DEVICES shows them); name a GPU it has, or cap the CPU with --max-memory cpu=SIZE.")


def load_sharded(loader: Any, name_or_path: str, what: str, dtype: Any, device_map: str,
                 max_memory: Mapping[str, str] | None, component: str) -> Any:
    """``loader`` spread by accelerate (:func:`spatialprobe.loading.load_pretrained` with
    ``device_map``), in eval mode. Weights that go to the disk are read from a ``.safetensors``
    checkpoint where they lie; others are written to a temporary folder (under ``$TMPDIR``),
    removed when the model is, and named in the run's provenance."""
    from spatialprobe.extras import require
    from spatialprobe.loading import load_pretrained, note_placement

    require("accelerate", EXTRA, FEATURE)
    check_gpus(max_memory or {})
    folder = tempfile.mkdtemp(prefix="spatialprobe-offload-")
    try:
        model = load_pretrained(loader, name_or_path, what, dtype=dtype, device_map=device_map,
                                max_memory=accelerate_memory(max_memory or {}) or None,
                                offload_folder=folder)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    used = any(Path(folder).iterdir())
    if used:
        weakref.finalize(model, shutil.rmtree, folder, True)
    else:
        shutil.rmtree(folder, ignore_errors=True)
    model.eval()
    note_placement(component, dtype, placement(model) + (f"; offloaded to {folder}" if used else ""))
    return model


def placement(model: Any) -> str:
    """Where accelerate put the model's modules: ``device map: cpu (2 modules), disk (1 module)``."""
    counts: dict[str, int] = {}
    for device in device_map_of(model).values():
        key = f"cuda:{device}" if isinstance(device, int) else str(device)
        counts[key] = counts.get(key, 0) + 1
    return "device map: " + ", ".join(f"{d} ({n} module{'s' if n > 1 else ''})" for d, n in counts.items())


def device_map_of(model: Any) -> dict[str, Any]:
    """The model's ``hf_device_map`` (module name -> device); a model accelerate left whole on one
    device has none: ``{"": its device}``."""
    found = getattr(model, "hf_device_map", None)
    if found:
        return dict(found)
    return {"": str(next(model.parameters()).device)}


def input_device(model: Any):
    """Where a sharded model's inputs go: the device its input embedding runs on (the GPU it lies
    on; for one kept on the CPU or the disk, the first GPU, where accelerate runs offloaded layers,
    or the CPU when there is none)."""
    import torch

    embedding = model.get_input_embeddings()
    name = next((n for n, m in model.named_modules() if m is embedding), "")
    mapped = device_map_of(model)
    owner = max((k for k in mapped if k == "" or name == k or name.startswith(k + ".")), key=len, default=None)
    device = mapped.get(owner, "cpu") if owner is not None else "cpu"
    if device in ("cpu", "disk", "meta"):
        device = getattr(getattr(model, "_hf_hook", None), "execution_device", None)
        device = "cpu" if device is None else device  # GPU 0 is the integer 0: not "no device"
    return torch.device(f"cuda:{device}" if isinstance(device, int) else device)


def state_tensors(model: Any) -> Iterator[tuple[str, Any]]:
    """(name, tensor) of the model's state dict in name order; a tensor accelerate offloaded (on
    the meta device) is read from its offload store, in the dtype the model holds it in, so a
    sharded model hashes as the same model on one device does."""
    modules = dict(model.named_modules())
    for name, tensor in sorted(model.state_dict().items()):
        if tensor.device.type == "meta":
            owner, _, local = name.rpartition(".")
            tensor = _offloaded(modules.get(owner), local, name).to(tensor.dtype)
        yield name, tensor


def _offloaded(module: Any, local: str, name: str) -> Any:
    hook = getattr(module, "_hf_hook", None)
    for one in getattr(hook, "hooks", None) or ([hook] if hook is not None else []):  # SequentialHook: several
        weights = getattr(one, "weights_map", None)
        if weights is not None and local in weights:
            return weights[local]
    raise ModelLoadError(f"{name} is offloaded by accelerate, but its offload store does not hold it.")


def asked(device_map: str | None) -> bool:
    """Whether ``device_map`` asks for a spread model (``None`` and ``"none"``: no)."""
    return device_map not in (None, "none")


def load_placed(loader: Any, name_or_path: str, what: str, dtype: Any, device: Any, component: str,
                device_map: str | None = None, max_memory: Mapping[str, str] | None = None,
                model_obj: Any = None) -> tuple[Any, Any]:
    """(the model, where its inputs go): spread by accelerate when ``device_map`` asks, else
    loaded (or ``model_obj`` taken) and placed whole on ``device`` in ``dtype``."""
    from spatialprobe.loading import load_pretrained, place_model

    if asked(device_map) and model_obj is None:
        model = load_sharded(loader, name_or_path, what, dtype, str(device_map), max_memory, component)
        return model, input_device(model)
    model = model_obj or load_pretrained(loader, name_or_path, what, dtype=dtype)
    place_model(model, device, dtype)
    return model, device
