"""Models, devices and precision: the one place every component loads and places a model.

**Loading.** Every model, tokenizer, processor and pipeline loads through
:func:`load_pretrained` (``Class.from_pretrained(name_or_path)``), so a user with the Hugging Face
hub gets real models by id and anyone else passes a local directory; when it cannot be had, the
error is one sentence (:class:`ModelLoadError`) that names the model and says what to do.

**Device.** :func:`resolve_device`: ``auto`` is CUDA when PyTorch sees a GPU, else the CPU; asking
for CUDA without one is a clear error.

**Precision.** One rule, :func:`resolve_precision`: on the CPU everything is float32; on CUDA,
``auto`` is the component's half type (its ``cuda`` default below) and an explicit
``fp32|bf16|fp16`` is taken as asked. bfloat16 on a GPU without it falls back to float16. A
component then applies the dtype in one of two ways:

- **weights** (:func:`place_model`, or :func:`dtype_kwargs` at load): the model is held in the
  half type. The text scorers (float16) and the QA answerers do this, and so do the diffusion
  pipelines (float16, the dtype the public Stable Diffusion checkpoints are published in).
- **autocast** (:func:`autocast`): float32 weights, matrix products in the half type. The
  vision-language models and detectors (float16) and VQGAN+CLIP (bfloat16: its optimisation needs
  the range; fp16 gets a loss scaler, :func:`grad_scaler`) do this.

The CUDA defaults, each with its reason, are :data:`CUDA_DEFAULTS`.
"""

from __future__ import annotations

import contextlib
import contextvars
from pathlib import Path
from typing import Any

from spatialprobe.errors import ModelLoadError, UsageError


# ---- loading ---------------------------------------------------------------------------------
def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the Hugging Face hub's host (``HF_ENDPOINT`` or huggingface.co) answers on its port."""
    import os
    import socket
    from urllib.parse import urlparse

    if os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes"):
        return False
    url = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    try:
        with socket.create_connection((url.hostname, url.port or (443 if url.scheme == "https" else 80)),
                                      timeout=timeout):
            return True
    except OSError:
        return False


_HUB: contextvars.ContextVar[tuple[str | None, bool]] = contextvars.ContextVar("hub", default=(None, False))
"""(revision, trust_remote_code) of the command running: ``--revision`` and ``--trust-remote-code``."""


@contextlib.contextmanager
def hub_settings(revision: str | None = None, trust_remote_code: bool = False):
    """Within: every :func:`load_pretrained` of a hub model loads ``revision`` and trusts the
    checkpoint's code if asked (a command's ``--revision`` / ``--trust-remote-code``)."""
    token = _HUB.set((revision, bool(trust_remote_code)))
    try:
        yield
    finally:
        _HUB.reset(token)


def hub_defaults() -> tuple[str | None, bool]:
    """The (revision, trust_remote_code) the running command asked for."""
    return _HUB.get()


def load_pretrained(loader: Any, name_or_path: str, what: str, dtype: Any = None, *,
                    revision: str | None = None, trust_remote_code: bool = False, **kwargs) -> Any:
    """``loader.from_pretrained(name_or_path, **kwargs)`` with one clear sentence when it cannot be had.

    ``what`` names the thing for the message ("the masked LM", "the VQGAN"). ``dtype``: the
    dtype a model's weights load in (from :func:`resolve_precision`, or ``"checkpoint"``);
    every model load passes one, because transformers 5 otherwise keeps the checkpoint's own
    dtype, and a checkpoint saved in bfloat16 would silently score in bfloat16 on the CPU.
    Tokenizers, processors and configurations pass none. ``revision``: the hub branch, tag or
    commit (a hub id only); ``trust_remote_code``: run the checkpoint's own Python code, off
    unless asked for (``--trust-remote-code``). A hub id is first
    looked up in the local cache; only when it is not there and the hub can be reached is it
    downloaded, so an offline machine gets the answer at once instead of after the hub client's
    retries."""
    if dtype is not None:
        library = "diffusers" if getattr(loader, "__module__", "").startswith("diffusers") else "transformers"
        kwargs.update(dtype_kwargs(dtype, library))
    asked_revision, asked_trust = hub_defaults()
    revision = revision if revision is not None else asked_revision
    if revision is not None:
        if Path(str(name_or_path)).exists():
            raise UsageError(f"--revision {revision} applies to hub models; {str(name_or_path)!r} is a "
                             "local directory, which has no revisions.")
        kwargs["revision"] = revision
    if trust_remote_code or asked_trust:
        kwargs["trust_remote_code"] = True
    try:
        if not Path(str(name_or_path)).exists():
            try:
                return loader.from_pretrained(str(name_or_path), local_files_only=True, **kwargs)
            except (OSError, ValueError, KeyError):
                if looks_local(str(name_or_path)) or not hub_reachable():
                    raise OSError("not in the local Hugging Face cache, and the hub cannot be reached") from None
        return loader.from_pretrained(str(name_or_path), **kwargs)
    except LOAD_ERRORS + _config_errors() as err:
        raise ModelLoadError(load_error(what, str(name_or_path), err, revision)) from None


LOAD_ERRORS: tuple[type[BaseException], ...] = (OSError, ValueError, KeyError, TypeError)
"""What a checkpoint that cannot be had raises from ``from_pretrained`` (a missing file, a bad
``config.json``, a field of the wrong type)."""


def _config_errors() -> tuple[type[BaseException], ...]:
    """What transformers' configuration classes raise for a ``config.json`` whose field has the
    wrong type (huggingface_hub's strict dataclasses; no ValueError)."""
    try:
        from huggingface_hub.errors import StrictDataclassError
    except ImportError:
        return ()
    return (StrictDataclassError,)


def looks_local(name_or_path: str) -> bool:
    """Whether a model name can only be a local path (a hub id is ``NAME`` or ``OWNER/NAME``):
    it exists, is absolute, starts with ``.`` or ``~``, or has more than one separator."""
    import os

    return (Path(name_or_path).exists() or os.path.isabs(name_or_path)
            or name_or_path.startswith((".", "~")) or "\\" in name_or_path
            or name_or_path.count("/") > 1)


def hub_download_command(repo_id: str, revision: str | None = None) -> str:
    """The installed hub client's download command: ``hf download`` (huggingface_hub 1.0 and
    later ship the ``hf`` command only), else ``huggingface-cli download``."""
    import shutil
    from importlib.metadata import PackageNotFoundError, version

    try:
        major = int(version("huggingface_hub").split(".")[0])
    except (PackageNotFoundError, ValueError):
        major = 0
    client = "hf" if major >= 1 or (shutil.which("hf") and not shutil.which("huggingface-cli")) \
        else "huggingface-cli"
    return f"{client} download {repo_id}" + (f" --revision {revision}" if revision else "")


def load_error(what: str, name_or_path: str, err: BaseException, revision: str | None = None) -> str:
    """The one sentence of a model that cannot be loaded: a local path that is missing or holds
    no checkpoint is said to be so (nothing to download); a hub id gets the download command."""
    detail = str(err).splitlines()[0][:200] if str(err) else type(err).__name__
    path = Path(name_or_path)
    if path.exists():
        return (f"Could not load {what} {name_or_path!r}: the directory exists but does not hold a "
                f"loadable checkpoint (details: {detail}).")
    if looks_local(name_or_path):
        return (f"Could not load {what} {name_or_path!r}: there is no such local directory; pass the "
                "directory of a saved checkpoint, or a Hugging Face hub id.")
    return (f"Could not load {what} {name_or_path!r} (it is not a local directory, and the Hugging "
            f"Face hub could not provide it): check the name, or download it where the hub is "
            f"reachable (`{hub_download_command(name_or_path, revision)}`) and pass the local "
            f"directory. (details: {detail})")


# ---- device ----------------------------------------------------------------------------------
def resolve_device(device: Any = "auto"):
    """``auto`` -> cuda when available, else cpu; asking for cuda without a GPU is a clear error.
    Returns a ``torch.device`` (a ``torch.device`` given is returned as it is)."""
    import torch

    if isinstance(device, torch.device):
        return device
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if str(device).startswith("cuda") and not torch.cuda.is_available():
        raise ModelLoadError(f"--device {device} was asked for, but PyTorch sees no CUDA GPU here; "
                             "use --device cpu.")
    return torch.device(device)


def _as_device(device: Any):
    """A device already resolved (a string or ``torch.device``) as a ``torch.device``; ``auto``
    resolved. No availability check: the component checked when it resolved its device."""
    import torch

    return resolve_device(device) if device == "auto" else torch.device(device)


def device_name(device: Any = "auto") -> str:
    """:func:`resolve_device` as a string (``"cuda"``, ``"cuda:1"``, ``"cpu"``)."""
    return str(resolve_device(device))


# ---- precision -------------------------------------------------------------------------------
PRECISIONS = ("auto", "fp32", "bf16", "fp16")
"""What ``--precision`` takes (``float32``, ``bfloat16`` and ``float16`` are accepted too)."""

CUDA_DEFAULTS: dict[str, tuple[str, str]] = {
    "text scorers": ("fp16", "weights: masked and causal LMs score in float16 on a GPU"),
    "t5 answerer": ("bf16", "weights: T5 checkpoints were trained in bfloat16 and overflow in float16"),
    "vqa answerers": ("fp16", "weights: ViLT and BLIP answer in float16"),
    "vision-language": ("fp16", "autocast: ViLT, CLIP scoring, detectors"),
    "multimodal LLMs": ("checkpoint", "weights in the dtype the checkpoint was saved in, under "
                                      "float16 autocast: these checkpoints are published in half types"),
    "multimodal LLM adapter": ("bf16", "weights: models/mllm.py; these chat checkpoints are published "
                                       "in bfloat16 or float16, and bfloat16 keeps float32's range"),
    "vsr fine-tuning": ("fp16", "the Trainer's mixed precision (float32 master weights, loss scaling)"),
    "vqgan-clip": ("bf16", "autocast: the optimisation's gradients need bfloat16's range"),
    "diffusion": ("fp16", "weights: the dtype the public Stable Diffusion checkpoints are published in"),
}
"""The CUDA half type under ``--precision auto``, per component, with how it is applied and why."""


def _dtypes():
    import torch

    return {"fp32": torch.float32, "float32": torch.float32, "bf16": torch.bfloat16,
            "bfloat16": torch.bfloat16, "fp16": torch.float16, "float16": torch.float16}


def resolve_precision(precision: str, device: Any, component: str = "vision-language") -> Any:
    """The dtype ``component`` (a key of :data:`CUDA_DEFAULTS`) runs in: float32 on the CPU under
    ``auto``; on CUDA ``auto`` is the component's half type (bfloat16 falling back to float16
    where the GPU lacks it); an explicit precision is taken as asked. Returns a torch dtype.
    Each answer is noted for the run's provenance (:func:`resolved_devices`)."""
    dtype = _precision(precision, device, component)
    _RESOLVED.add((component, str(_as_device(device)), dtype_name(dtype)))
    return dtype


_RESOLVED: set[tuple[str, str, str]] = set()
"""(component, device, dtype) of every :func:`resolve_precision` since a run last took them."""


def resolved_devices() -> list[dict[str, str]]:
    """The device and dtype each component resolved since the last call (the run spine calls it
    once per run, for ``summary.json``'s provenance), and forget them."""
    taken = sorted(_RESOLVED)
    _RESOLVED.clear()
    return [{"component": c, "device": d, "dtype": t} for c, d, t in taken]


def note_placement(component: str, dtype: Any, where: str) -> None:
    """A model spread over devices (:mod:`spatialprobe.sharding`) in the run's provenance:
    ``where`` (its device map) replaces the single device :func:`resolve_precision` noted."""
    for noted in [n for n in _RESOLVED if n[0] == component and n[2] == dtype_name(dtype)]:
        _RESOLVED.discard(noted)
    _RESOLVED.add((component, where, dtype_name(dtype)))


def _precision(precision: str, device: Any, component: str) -> Any:
    import torch

    dtypes = _dtypes()
    if precision == "auto":
        if _as_device(device).type != "cuda":
            return torch.float32
        half = CUDA_DEFAULTS[component][0]
        if half not in dtypes:
            raise UsageError(f"{component} loads its checkpoint's own dtype on CUDA, not one of {PRECISIONS}.")
        dtype = dtypes[half]
        if dtype == torch.bfloat16 and not torch.cuda.is_bf16_supported():
            return torch.float16
        return dtype
    if precision not in dtypes:
        raise UsageError(f"Unknown precision {precision!r}; use {', '.join(PRECISIONS)}.")
    return dtypes[precision]


def dtype_name(dtype: Any) -> str:
    """``torch.bfloat16`` -> ``"bfloat16"``: how a dtype is recorded in a run's description."""
    return str(dtype).replace("torch.", "")


def autocast_enabled(device: Any, dtype: Any) -> bool:
    """Autocast runs on CUDA for either half type and on the CPU for bfloat16 (the CPU's
    float16 autocast covers few ops, so there fp16 stays float32)."""
    import torch

    device = _as_device(device)
    if device.type == "cuda":
        return dtype != torch.float32
    return device.type == "cpu" and dtype == torch.bfloat16


def autocast(device: Any, dtype: Any = None):
    """Mixed precision where :func:`autocast_enabled`, a no-op otherwise. ``dtype`` None: the
    vision-language models' ``auto`` rule (float16 on CUDA)."""
    import torch

    device = _as_device(device)
    dtype = resolve_precision("auto", device, "vision-language") if dtype is None else dtype
    if autocast_enabled(device, dtype):
        return torch.autocast(device_type=device.type, dtype=dtype)
    return contextlib.nullcontext()


def grad_scaler(device: Any, dtype: Any):
    """A loss scaler, enabled for fp16 (whose gradients underflow without one); a pass-through
    otherwise. ``torch.amp.GradScaler`` exists from torch 2.3, the CUDA one before that."""
    import torch

    device = _as_device(device)
    enabled = dtype == torch.float16
    if hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler(device.type, enabled=enabled)
    return torch.cuda.amp.GradScaler(enabled=enabled and device.type == "cuda")


DTYPE_KEYWORD_SINCE = {"transformers": (4, 56), "diffusers": (0, 40)}
"""The release from which each library's ``from_pretrained`` takes ``dtype`` (``torch_dtype`` before)."""


def dtype_kwargs(dtype: Any, library: str = "transformers") -> dict[str, Any]:
    """The ``from_pretrained`` keyword that loads weights in ``dtype`` (``"checkpoint"``: the
    dtype the checkpoint was saved in; float32 is passed too, so a checkpoint saved in half
    precision is not silently kept in it). ``dtype`` where ``library`` has it, else ``torch_dtype``."""
    from importlib.metadata import version

    if dtype == "checkpoint":
        dtype = "auto"  # from_pretrained's word for the saved dtype
    elif isinstance(dtype, str):
        dtype = _dtypes()[dtype]
    major, minor = (int(x) for x in version(library).split(".")[:2])
    return {"dtype" if (major, minor) >= DTYPE_KEYWORD_SINCE[library] else "torch_dtype": dtype}


def place_model(model: Any, device: Any, dtype: Any = None) -> Any:
    """Put a model in eval mode on ``device``, its weights in ``dtype`` (None: the text scorers'
    ``auto`` rule, float16 on CUDA). Returns the dtype it now holds (recorded in the component's
    description)."""
    device = _as_device(device)
    dtype = resolve_precision("auto", device, "text scorers") if dtype is None else dtype
    model.eval().to(device=device, dtype=dtype)
    return dtype
