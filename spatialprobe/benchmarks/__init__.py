"""The field's benchmarks, one module each: its items (a stable key, the wording for each
protocol, options, image(s), gold, clusters, the canonical fact), its quirks as named hooks and
its official metrics by name, declared with the vocabulary of :mod:`.base`; its local copy read
through :mod:`.local_copy` (or :mod:`.coco_images` for images named by file). The engine
(:mod:`spatialprobe.engine`) asks any of them of any model that understands its items. A new
benchmark is one module here, its builder declared with ``@component("source", NAME, SUMMARY)``
(:func:`spatialprobe.registry.component`).
"""
