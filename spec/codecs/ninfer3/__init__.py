"""Declarative geometry of the `.ninfer` v3 numeric formats and storage layouts
(spec/ninfer3.md §formats, §layouts).

`formats` holds the numeric formats (code width, group, legal codes, scale type), `layouts` the
byte geometry of each layout (planes, padding, offsets, row views) and `registry` the closed set of
(format, layout) codec pairs with their rule ids. Pure data and arithmetic: no I/O, no NumPy.
"""
