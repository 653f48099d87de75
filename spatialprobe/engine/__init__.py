"""The asked-items engine: any benchmark (:mod:`spatialprobe.benchmarks`) asked of any model
adapter that can score or generate, by either protocol, under any image condition.

``build`` turns what a command was given into a run's settings; ``load`` loads the model the
settings name; ``rebuild`` makes the benchmark's items again from recorded settings (with a
``subset`` of them and generated robustness ``variants``); ``wording`` picks how the items are put
to the model (what it understands and the benchmark offers); ``protocols`` asks the items;
``reading`` reads each item's answers by the benchmark's official reader and by ``strict``;
``run`` is the run kind (``ask`` in ``config.json``) the run spine executes; ``metrics``
resamples its rows, ``robustness`` and ``question_free`` add their checks and ``table`` writes
``table.md``; ``repeated_sampling`` asks an item K times, ``stream`` writes rows as a server
answers them; ``legacy`` maps folders of the retired run kinds onto it.
"""
