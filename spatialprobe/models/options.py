"""The settings a model adapter declares, and ``--scorer-arg key=value`` checked against them.

Each adapter class lists its settings in ``options`` (name -> :class:`~.base.Option`); the
commands pass what the user gave here and get back the adapter's keyword arguments, every declared
setting filled in (given or default), so a run's identity (the component spec's ``args``) names
them all. An unknown key, or a value of the wrong type or outside the choices, is refused in one
sentence naming the adapter and the options it takes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from spatialprobe import registry
from spatialprobe.errors import UsageError
from spatialprobe.models.base import Option


def declared(name: str) -> Mapping[str, Option]:
    """The options the ``model`` adapter ``name`` declares (none when it declares nothing)."""
    return dict(getattr(registry.lookup("model", name), "options", None) or {})


def listing(name: str) -> str:
    """``normalize (sum|token|char, default sum), format (...)``, or ``none``."""
    options = declared(name)
    if not options:
        return "none"
    return ", ".join(f"{key} ({'|'.join(map(str, o.choices)) + ', ' if o.choices else ''}default "
                     f"{_short(o.default)})" for key, o in options.items())


def _short(value: Any) -> str:
    """A default as listed: a long one (an instruction prompt) cut to its start."""
    text = str(value).replace("\n", " ")
    return text if len(text) <= 30 else text[:27] + "..."


def owners(key: str) -> list[str]:
    """The model adapters that declare option ``key``."""
    return [name for name in registry.names("model") if key in declared(name)]


def parse_pairs(pairs: Iterable[str], flag: str = "--scorer-arg") -> dict[str, str]:
    """``["normalize=char", ...]`` -> ``{"normalize": "char"}``; a pair without ``=`` is refused
    (naming ``flag``)."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{flag} takes key=value, not {pair!r}.")
        out[key.strip()] = value
    return out


def _read(name: str, key: str, option: Option, value: Any) -> Any:
    if option.type is bool and isinstance(value, str):
        if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
            raise UsageError(f"the {name} model's option {key} is true or false, not {value!r}.")
        value = value.lower() in ("true", "1", "yes")
    try:
        value = option.type(value)
    except UsageError:  # the option's own sentence
        raise
    except (TypeError, ValueError):
        raise UsageError(f"the {name} model's option {key} takes a {getattr(option.type, '__name__', 'value')}, "
                         f"not {value!r}; its options: {listing(name)}.") from None
    if option.choices and value not in option.choices:
        raise UsageError(f"the {name} model's option {key} is one of "
                         f"{', '.join(map(str, option.choices))}, not {value!r}.")
    return value


def resolve(name: str, given: Mapping[str, Any]) -> dict[str, Any]:
    """Every option ``name`` declares, as given (checked and converted) or its default."""
    options = declared(name)
    unknown = [key for key in given if key not in options]
    if unknown and unknown[0] in ("device_map", "max_memory"):  # hf-mllm's former scorer-arg
        flag = "--" + unknown[0].replace("_", "-")
        raise UsageError(f"{unknown[0]} is not a --scorer-arg of the {name} model: give {flag} (an option "
                         "of its own, for every text and multimodal LLM).")
    if unknown:
        raise UsageError(f"the {name} model takes no option {unknown[0]!r}; its options: {listing(name)}.")
    return {key: (_read(name, key, option, given[key]) if key in given else option.default)
            for key, option in options.items()}


def build(name: str, model: str, given: Mapping[str, Any], **runtime: Any) -> Any:
    """The ``model`` adapter ``name`` for checkpoint ``model``: its options resolved from
    ``given``, plus the runtime settings (device, batch size) that change no result."""
    return registry.build("model", registry.Spec(name, {"model": model, **runtime, **resolve(name, given)}))


def shardable() -> list[str]:
    """The model adapters that can be spread over devices (their class says ``shards = True``)."""
    return [name for name in registry.names("model") if getattr(registry.lookup("model", name), "shards", False)]


def sharding(name: str, device: str, device_map: str | None, max_memory: Mapping[str, str] | None
             ) -> dict[str, Any]:
    """The runtime arguments that spread the ``name`` adapter's model over devices
    (:mod:`spatialprobe.sharding`): ``{}`` when ``--device-map`` is not given; each setting that
    does not apply refused in one sentence."""
    from spatialprobe.sharding import DEVICE_MAPS, asked

    if not asked(device_map):
        if max_memory:
            raise UsageError("--max-memory applies with --device-map auto (it caps what each device "
                             "holds of a spread model); without it the model sits whole on --device.")
        return {}
    if device_map not in DEVICE_MAPS:
        raise UsageError(f"--device-map takes {', '.join(DEVICE_MAPS)}, not {device_map!r}.")
    if name not in shardable():
        raise UsageError(f"--device-map applies to the {', '.join(shardable())} models (masked, causal and "
                         f"multimodal LLMs); the {name} model cannot be spread over devices.")
    if device != "auto":
        raise UsageError(f"--device {device} does not apply with --device-map auto, which places the "
                         "model itself (every visible GPU, then the CPU, then the disk): choose the GPUs "
                         "with CUDA_VISIBLE_DEVICES and cap them with --max-memory.")
    return {"device_map": device_map, **({"max_memory": dict(max_memory)} if max_memory else {})}


def scaled_adapter(name: str, model: str, given: Any, **runtime: Any) -> Any:
    """:func:`build` through :func:`spatialprobe.runner.components.component`: the ``model`` adapter
    ``name`` for checkpoint ``model``, described on the cluster under ``--ray`` (never loaded by
    the driver there)."""
    from spatialprobe.registry import Spec
    from spatialprobe.runner.components import component

    return component("model", Spec(name, {"model": model, **runtime, **resolve(name, given)}))


SERVER_FLAGS = {"base_url": "--base-url", "api_key_env": "--api-key-env"}
"""The options a command takes for a model behind a server, by the adapter option each one sets."""


def with_server_flags(name: str, flags: Mapping[str, str | None], given: Mapping[str, Any]) -> dict[str, Any]:
    """``given`` (the ``--scorer-arg`` options) with ``--base-url`` and ``--api-key-env`` (``flags``:
    option -> value, None where not typed) set; each refused in one sentence where the ``name``
    adapter takes no such option, or where ``--scorer-arg`` gave the same option another value."""
    out = dict(given)
    for key, value in flags.items():
        if value is None:
            continue
        flag = SERVER_FLAGS[key]
        if key not in declared(name):
            servers = ", ".join(owners(key)) or "none"
            raise UsageError(f"{flag} applies to a model behind a server (the {servers} adapter); the {name} "
                             "adapter runs its model in this process.")
        if key in out and str(out[key]) != value:
            raise UsageError(f"{flag} and --scorer-arg {key}= give two values; give {flag} alone.")
        out[key] = value
    return out
