"""bindkit's data as Hugging Face datasets: export (:mod:`.export`) and read back (:mod:`.read`).

An export folder holds parquet shards with typed :class:`datasets.Features` (SABER images as the
``Image`` feature, bytes embedded), a dataset card ``README.md`` whose YAML lists the configs,
and ``bindkit.json``: what was exported from where, the files' hashes and the bindkit-side
files (manifest, ``splits.json``, diagnostics) kept verbatim under ``bindkit/``. The row
conversions both ways live in :mod:`.schema` (pure functions).
"""
