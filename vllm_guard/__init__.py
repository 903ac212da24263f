"""vllm-guard: a drop-in `vllm serve` that checks before it loads and supervises after.

Importing the package has no side effects: no NVML initialisation, no network,
no heavy imports. Everything is imported where it is used.
"""

__version__ = "0.1.0"
