"""bindkit in mteb 2.x: tasks, models, result exports and mteb's own CLI with bindkit's tasks.

Imported on demand by the commands that need it; needs ``pip install 'bindkit[mteb]'``.
"""
