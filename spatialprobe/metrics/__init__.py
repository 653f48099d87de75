"""Statistics: the registry of statistics by name (one declaration and one display name each),
point estimates, cluster-robust intervals, paired tests, multiple comparisons, ranks, consistency
and the comparison of the two answer protocols."""
