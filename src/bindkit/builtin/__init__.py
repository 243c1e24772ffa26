"""What builds the models bindkit ships: ``builtin:tiny-clip`` and ``builtin:tiny-vlm``.

The weights, tokenizers and cards in ``bindkit/embed/backends/data/tiny_clip/`` and
``tiny_vlm/`` are package data; the code that makes them is package code, here, under the same
rules as the rest of the library (layer test, typed options, one-line errors).
``scripts/train_tiny_clip.py`` and ``scripts/train_tiny_vlm.py`` are thin wrappers over
:func:`bindkit.builtin.tiny_clip.main` and :func:`bindkit.builtin.tiny_vlm.main`.

- :mod:`bindkit.builtin.build`: the frame both share (options from a config dataclass, the
  multi-positive InfoNCE, the warm-up + cosine schedule, the SABER scores, ``training.json``);
- :mod:`bindkit.builtin.tiny_clip`, :mod:`bindkit.builtin.tiny_vlm`: each model's data, loss and
  training loop;
- :mod:`bindkit.builtin.cards`: the two model cards (``README.md``) from a training summary.

The name is the spec's prefix: ``bindkit.builtin.tiny_clip`` trains ``builtin:tiny-clip``
(:mod:`bindkit.embed.backends.builtin` loads it).
"""
