"""`bipd campaign`: tuning campaigns of lock-step HIL scenarios on Ray.

spec (the YAML, checked) · trials (grid and random proposals, keys, one trial on a fresh bench) ·
store (the JSONL of finished trials) · execute (Ray tasks, timeouts, optuna ask-and-tell) ·
report (sorted table, Pareto front and plot) · cli (``bipd campaign ...``).
"""
