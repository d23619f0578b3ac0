"""The numerics contract: named profiles and their constants (spec/numerics.md)."""
