"""Audits of a benchmark and of a run: how much of a benchmark its questions give away without
the image (:mod:`.blind`, :mod:`.debias`), how much of a score is the answer parser's
(:mod:`.parse`), and the blind floor of a question-asking text-to-image judge (:mod:`.judge_floor`)."""
