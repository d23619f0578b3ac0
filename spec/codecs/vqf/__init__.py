"""VQF tensor encodings (vqf.md §5): block geometry, the codec registry and the layout rules."""
