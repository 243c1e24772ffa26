"""``bindkit export saber|synth|clusters``: a bindkit directory as a Hugging Face dataset folder.

:mod:`.write` builds the shards, the dataset card and ``bindkit.json`` and pushes a folder to the
Hub; the format's names and row conversions are :mod:`bindkit.hfdata`'s, which reads it back.
"""
