"""`weightfile bench`: the board-side performance run (issue 6, part 3).

synthetic: models of real geometry; machine: what ran it; bandwidth: its memory read bandwidth;
measure: one function per reported number; report: the JSON schema and the run; table: the md,
csv and jsonl outputs; plot: `--plot`; progress: the terminal-only progress bar.
"""
