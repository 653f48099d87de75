"""Other harnesses' per-item logs as runs (``spatialprobe import``), and runs as one long table or
Every Eval Ever records (``spatialprobe export``); one module per format."""
