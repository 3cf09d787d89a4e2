"""The benchmarks that ship with the package and run as `iotbench bench NAME`.

The repository's top-level bench/ holds benchmark scripts run from a clone with
`python bench/NAME.py`. Both print rates and ratios; no test asserts on them.
"""
