"""Pure metric functions: arrays in, numbers out. No models, no file I/O.

Scores at most :data:`TIE_EPS` apart (``higher - lower <= TIE_EPS`` in float64; exactly 1e-6 is a
tie) count as ties everywhere: two kernels computing the same float32 dot product can differ by
that much, so treating such a difference as a preference would reward accidents of computation
order. In a ranking, ties chain into tie groups
(:mod:`bindkit.metrics.retrieval` states the rule and why).
"""

TIE_EPS = 1e-6
