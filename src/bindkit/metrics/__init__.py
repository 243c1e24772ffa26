"""Pure metric functions: arrays in, numbers out. No models, no file I/O.

Scores closer than :data:`TIE_EPS` count as ties everywhere: a cosine difference of 1e-6 is
below float32 round-off of the same dot product computed by two different kernels, so treating
it as a preference would reward accidents of computation order.
"""

TIE_EPS = 1e-6
