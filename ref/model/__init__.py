"""Hugging Face Qwen3 names (`hf_names.py`) only: the Qwen3 decoder itself is
`weightfile.ref.qwen3`, and these names move with the importers to `weightfile.convert`."""
