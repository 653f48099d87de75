"""Model adapters, one module each, speaking one vocabulary: ``score`` (each option's
log-likelihood) and/or ``generate`` (a reply) requests in, one answer per request out. Each declares
what it accepts (``accepts(config)``), its protocols and wordings and its ``fingerprint()``;
:mod:`.choice` picks among those that accept a checkpoint."""
