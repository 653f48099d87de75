"""Readers: a model's answer (a free-text reply, or the options' scores) read as one of an item's
options, as a number, as another value its authors' code keeps, or as nothing, with the reason.

``base`` says what a reader is (:class:`~spatialprobe.readers.base.Reader`, registered by name in
:mod:`spatialprobe.registry` as kind ``reader``); ``strict`` holds the toolkit's two (``strict``:
the reply is exactly an option's letter or text, or exactly a number; ``toolkit``: the engine's
documented parser, :mod:`.option_parser`, and :mod:`.numeric`'s number reader). A module named
after a benchmark (``site``, ``mmsi``, ``blink``, ``spatialeval``, ``spatialmqa``, ``viewspatial``,
``mindcube``, ``omnispatial``, ``spatialscore``, ``vsibench``) is **that benchmark's reader**: its
authors' code transcribed, cited by repository, commit, path and lines, quirks included - the
benchmark's module of the same name in :mod:`spatialprobe.benchmarks` names it (``Source.reader``).
Readers shared by several benchmarks are named after the code they come from: ``lmms`` (lmms-eval's
first letter: CV-Bench, EmbSpatial), ``vlmeval`` (VLMEvalKit's ``can_infer`` and
``can_match_option``, plain functions) and ``vlmeval_mcq`` (the two as readers), ``ranking``
(What'sUp's and COMFORT's readings of the scores). Every run reads each answer by the benchmark's
official reader and by ``strict`` (:mod:`spatialprobe.engine.reading`).
"""
