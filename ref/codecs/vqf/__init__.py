"""Readable VQF codecs (vqf.md §5-§6), one module per registry name; the oracle for fast/."""
