"""VQF container: what the bytes are (spec/vqf.md §file-layout, §header, §directory, §inventory,
§loader-chain). Declarative; no I/O."""
