"""Reference reader, writer and describer of the `.ninfer` v3 container (spec/ninfer3.md)."""
