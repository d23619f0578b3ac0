"""Vectorised VQF codecs: the same modules and functions as ref/codecs/vqf, bit for bit."""
