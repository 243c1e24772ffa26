"""Text-only benchmarks read from one file: STS (Spearman with gold relatedness) and binding
triplets. Shared: the one-file loader (:mod:`._base`)."""
