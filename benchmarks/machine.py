"""The benchmarks' machine line now lives in the package (weightfile.bench.machine)."""

from weightfile.bench.machine import describe_machine

__all__ = ["describe_machine"]
