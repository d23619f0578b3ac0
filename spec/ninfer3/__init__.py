"""Declarative description of the NInfer `.ninfer` v3 container (ninfer-v3.md §1, §2, §4)."""
