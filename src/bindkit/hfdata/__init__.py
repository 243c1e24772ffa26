"""bindkit's data as Hugging Face datasets, read back: :mod:`bindkit.export` writes them.

An export folder holds parquet shards with typed :class:`datasets.Features` (SABER images as the
``Image`` feature, bytes embedded), a dataset card ``README.md`` whose YAML lists the configs,
and ``bindkit.json``: what was exported from where, the files' hashes and the bindkit-side
files (manifest, ``splits.json``, diagnostics) kept verbatim under ``bindkit/``. The export's
names live in :mod:`.format`, the row conversions both ways in :mod:`.schema` (pure functions),
the read-back in :mod:`.read`.
"""
