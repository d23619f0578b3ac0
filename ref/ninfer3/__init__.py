"""Reference reader, writer and describer of the `.ninfer` v3 container (ninfer-v3.md)."""
