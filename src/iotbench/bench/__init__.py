"""Benchmarks that `iotbench bench NAME` runs (the scripts in the repository's bench/ are
run with python directly). They print rates and ratios; no test asserts on them."""
