"""Benchmarks: each module reads its data, asks an embedder for vectors and turns similarity
scores into metrics. Tasks never import a model backend."""
