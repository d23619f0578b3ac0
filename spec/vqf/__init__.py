"""VQF container: what the bytes are (spec/vqf.md §1–§3, §7, §9). Declarative; no I/O."""
