"""Readers: a model's answer (a free-text reply, or the options' scores) read as one of an item's
options, as another value its authors' code keeps, or as nothing, with the reason.

``base`` says what a reader is (:class:`~spatialprobe.readers.base.Reader`, registered by name in
:mod:`spatialprobe.registry` as kind ``reader``); ``strict`` holds the toolkit's two (``strict``:
the reply is exactly an option's letter or text; ``toolkit``: the engine's documented parser,
``parse``); the others transcribe a benchmark's own reader, cited by repository, commit, path and
lines, quirks included: ``site``, ``mmsi``, ``lmms`` (lmms-eval's first letter: CV-Bench,
EmbSpatial), ``vlmeval`` (VLMEvalKit's ``can_infer`` and ``can_match_option``, plain
functions) and ``vlmeval_mcq`` (the two as readers), ``blink``, ``spatialeval``, ``spatialmqa``,
``ranking`` (What'sUp's and COMFORT's readings of the scores). A benchmark names its official
reader (``Source.reader``); every run reads each answer by it and by ``strict``
(:mod:`spatialprobe.engine.reading`).
"""
