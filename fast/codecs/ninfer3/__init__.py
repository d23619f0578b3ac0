"""Vectorised `.ninfer` v3 codecs: same modules, functions and errors as `ref.codecs.ninfer3`.

`codec.get_codec(format, layout)` returns the bound codec of one registered pair.
"""
