"""Small synthetic copies of ViewSpatial-Bench, MindCube, OmniSpatial, SpatialScore and VSI-Bench in
their REAL layouts (tests/official/FORMATS.md), written by each benchmark module's own
``write_copy(folder, seed, n)`` (the writer its ``demo`` uses): the files their authors' code reads,
images drawn with Pillow, VSI-Bench's videos written with PyAV. Each returns the path ``--data`` is
given and the records written (invented content)."""

from __future__ import annotations

from spatialprobe.benchmarks.demo_copy import solid as image
from spatialprobe.benchmarks.mindcube import write_copy as mindcube
from spatialprobe.benchmarks.omnispatial import OMNI_TASKS
from spatialprobe.benchmarks.omnispatial import write_copy as omnispatial
from spatialprobe.benchmarks.spatialscore import write_copy as spatialscore
from spatialprobe.benchmarks.video_frames import write_video as video
from spatialprobe.benchmarks.viewspatial import write_copy as viewspatial
from spatialprobe.benchmarks.vsibench import VSI_MCA, VSI_NA
from spatialprobe.benchmarks.vsibench import write_copy as vsibench

__all__ = ["OMNI_TASKS", "VSI_MCA", "VSI_NA", "image", "mindcube", "omnispatial", "spatialscore", "video",
           "viewspatial", "vsibench"]
