"""Reading is already zero-copy (mmap views), so the fast reader is the reference reader."""

from weightfile.ref.vqf.read import Entry, Header, VQFFile, open_vqf

__all__ = ["Entry", "Header", "VQFFile", "open_vqf"]
