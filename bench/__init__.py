"""Benchmarks: `python -m bench` (or `make bench`). Each bench_*.py module has a main()
that prints ratios against a reference measured in the same run."""
