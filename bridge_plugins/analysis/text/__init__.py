"""Terminal output: the summary, compare and memory figures as text, and the main job's end-of-run text."""
