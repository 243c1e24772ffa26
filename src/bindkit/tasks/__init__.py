"""Benchmarks: each module reads its data, asks an embedder for vectors and turns similarity
scores into metrics. Tasks never import a model backend.

A family folder (``instance/``, ``pairs/``, ``mmeb/``, ``text/``) holds a ``_base`` module with
its base class and shared helpers, and one module per benchmark; ``saber`` and the generic
readers (``_files``, ``_images``) sit at this level. Modules share code through public names only.
"""
