"""What a person reads: tables, plots, the gallery, the index of runs, `report` (paired
differences), `compare` and `plan` (many models on the same items), consistency tables."""
