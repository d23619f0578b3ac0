"""VQF tensor encodings (spec/vqf.md §encodings): block geometry, the codec registry and the layout
rules."""
