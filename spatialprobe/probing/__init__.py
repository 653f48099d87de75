"""The probe run kind: cell scores, prompt selection over object-disjoint folds, metrics."""
