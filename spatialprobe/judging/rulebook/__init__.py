"""The judge rules as records: one :class:`~.record.JudgeRule` per rule, registered by name.

A rule's record holds everything about it: the tasks it judges, its geometry (a pure function of
:mod:`spatialprobe.detectors.rules` or of its own module, thresholds as arguments), the
thresholds ``--rule-arg`` may set, its modes (``corrected`` and, where it has one, the peer's code
as ``reference``) and its benchmark's own score. The judge run (:mod:`spatialprobe.judging.box`),
its table (:mod:`spatialprobe.judging.box_scores`), ``spatialprobe judge`` and ``spatialprobe ls``
read the record (:mod:`.lookup`), never the rule's name, so a new rule with its score is its
module here (or anywhere importable) and one ``register`` line in :mod:`spatialprobe.registry`.
"""
