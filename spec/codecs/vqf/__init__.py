"""VQF tensor encodings (spec/vqf.md §5): block geometry, the codec registry and the layout
rules."""
