"""Readable reference codecs of `.ninfer` v3 (spec/ninfer3.md §formats, §layouts): one module per
layout or encoder.

`codec.get_codec(format, layout)` returns the bound codec of one registered pair.
"""
