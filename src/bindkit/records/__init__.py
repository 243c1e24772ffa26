"""Result records below the tasks: what every reader of a result file shares.

:mod:`.fields` (accessors of one record and the files' naming rules), :mod:`.tables` (the table
type and number formatting of reports and task-owned tables), :mod:`.per_query` (the per-query
sidecar beside a result), :mod:`.instructions` (instruction-sweep files and their spread
tables). Nothing here knows a task, so tasks import it; :mod:`bindkit.results` writes and reports.
"""
