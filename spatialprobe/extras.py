"""Optional dependencies: import one, or say in one sentence which extra installs it.

Every import of a package that only an extra of ``setup.cfg`` installs goes through ``require``,
inside the function that needs it, so that ``import spatialprobe.cli`` and the base commands work
with the base dependencies alone. ``spatialprobe.cli.main`` prints a ``MissingExtra`` as one line.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from spatialprobe.errors import MissingExtra

#: What each extra of setup.cfg enables, as the subject of the error sentence.
EXTRA_FEATURES = {
    "synthesis": "Image synthesis (spatialprobe synthesize / convert)",
    "generalize": "Generalizing scenarios (spatialprobe generalize)",
    "qa": "Image question answering (spatialprobe qa image)",
    "vl": "The vision-language commands (spatialprobe vsr / vsr-train / spatialmqa)",
    "judge": "Judging images (spatialprobe judge / visor / annotate)",
    "multigpu": "Models spread over several devices (--device-map)",
    "ray": "Fanning a run out over Ray workers (--ray)",
    "api": "The openai-api model (an OpenAI-compatible server)",
    "benchmarks": "Reading a benchmark's Parquet or `datasets` copy (spatialprobe bench)",
    "interop": "Importing Inspect logs and VLMEvalKit .xlsx files, exporting Parquet (spatialprobe import/export)",
    "audit": "Image overlap by perceptual hash (spatialprobe audit data --against)",
}




def require(module: str, extra: str, feature: str | None = None) -> ModuleType:
    """Import and return ``module``; raise ``MissingExtra`` naming ``extra`` when it is absent.

    ``feature`` names what needs it (default: the extra's description in ``EXTRA_FEATURES``).
    """
    try:
        return importlib.import_module(module)
    except ImportError as err:
        # Only the module itself (or its top-level package) being absent means a missing extra;
        # a broken installation that fails further down keeps its own error.
        if err.name is not None and module.split(".")[0] != err.name.split(".")[0]:
            raise
        raise MissingExtra(module, extra, feature or EXTRA_FEATURES.get(extra, "This feature")) from None
