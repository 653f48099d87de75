"""Faithful transcriptions of benchmark authors' official scoring code, for fidelity tests.

Each module transcribes one benchmark's reply reader and metric aggregation, citing the
repository @ commit, path and lines it was read from. Nothing here imports ``spatialprobe``:
the modules are the reference the implementation is compared against.
"""
