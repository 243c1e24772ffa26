"""Result files (one JSON per model, task, data and pairing), the shared overwrite policy, and
reports that merge any set of result files (the records' shared fields: :mod:`bindkit.records`).
"""
