"""The canonical numerics profile as readable float32 operations (spec/numerics.md)."""
