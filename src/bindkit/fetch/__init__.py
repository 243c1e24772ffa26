"""``bindkit fetch TASK``: a benchmark's official files, downloaded into the layout its task reads.

:mod:`.sources` declares each task's plan (where every file is published, its licence, the
checksums bindkit pins); :mod:`.download` holds the resumable HTTP download and the archive
extraction; :func:`.fetcher.fetch` carries a plan out.
"""
