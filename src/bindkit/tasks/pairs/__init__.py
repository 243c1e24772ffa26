"""Caption and image choices: a model must score the right caption (or image) above a hard
negative (Winoground, ColorSwap, BiVLC, SugarCrepe, SugarCrepe++, ARO). Shared: the Winoground
text / image / group scoring, its per-tag tables and the strict positive-over-negative rule
(:mod:`._base`), and the loader of Hub parquet exports (:mod:`._parquet`)."""
