"""The text frontend: tokenizer.json, chat templates and streamed generation.

It lives under `weightfile/` rather than `ref/`: it wraps two libraries (Hugging Face
`tokenizers`, `jinja2`) instead of following a spec rule by rule, and only the CLI needs it.
"""
