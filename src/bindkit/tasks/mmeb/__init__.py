"""MMEB v1 and MMEB-V2 (VLM2Vec's embedding benchmarks): many datasets, each row a query and
its candidates, reported per meta-task. Shared: the meta-tasks and the per-model score gathering
(:mod:`._base`); MMEB-V2's readers are :mod:`._mmeb_v2_data`'s table."""
