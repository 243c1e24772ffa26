"""SABER: a controlled benchmark of attribute-object binding (vocabulary, rules, format, checks).

Modules: :mod:`~bindkit.saber.vocab` (vocabulary files), :mod:`~bindkit.saber.language` (articles,
text and generation forms, image prompts), :mod:`~bindkit.saber.build` (the MCQ rules and the
generator), :mod:`~bindkit.saber.io` (the ``saber.jsonl`` format) and
:mod:`~bindkit.saber.validate` (re-checks every rule on any SABER directory).
"""
