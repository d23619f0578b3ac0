"""Declarative description of the NInfer `.ninfer` v3 container (spec/ninfer3.md §framing,
§directory, §layouts)."""
