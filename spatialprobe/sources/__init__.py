"""Benchmarks as sources: one module per benchmark declares its items (a stable key, the wording
for each protocol, options, image(s), gold, clusters, the canonical fact), its quirks as named
hooks and its official metrics by name (:mod:`.base`). The one asked-items run kind
(:mod:`spatialprobe.benchmarks.ask`) runs any source with any model adapter that can score or
generate. A new benchmark is one module here and one ``register("source", ...)`` line in
:mod:`spatialprobe.registry`."""
