"""Analysis of stored results: statistics across repetitions and comparisons."""
