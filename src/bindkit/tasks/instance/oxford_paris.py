"""Oxford5K and Paris6K under their original protocol (Philbin et al., CVPR 2007 and 2008): 55
queries (11 landmarks × 5), each cropped to the box its query file gives, retrieve from the
whole image collection; good and ok images are relevant, junk images are skipped, and the AP is
the trapezoid rule of the Oxford Buildings ``compute_ap.cpp`` (:func:`~bindkit.metrics.instance.
oxford_ap`). Main score: mAP over the queries.

Files as published: the ground-truth folder (Oxford ``gt_files_170407.tgz``, Paris
``paris_120310.tgz``) holding per query ``<name>_query.txt`` (one line ``<image> x1 y1 x2 y2``;
Oxford writes the image as ``oxc1_<image>``, Paris without a prefix) and ``<name>_good.txt``,
``<name>_ok.txt``, ``<name>_junk.txt`` (one image name per line, no extension); and the images
(Oxford ``oxbuild_images-v1.tgz``: one flat folder; Paris ``paris_1-v1.tgz`` +
``paris_2-v1.tgz``: one folder per landmark; the names revisitop's ``python/download.py``
fetches). ``--data`` is the ground-truth folder or a folder holding it; the images are every
``*.jpg`` under ``--image-root``, subfolders included (default: ``oxbuild_images`` or ``paris``
beside the ground truth, e.g. ``DATA/oxbuild_images``: unpack the archives there), matched to
the ground truth by file stem. The collection is ranked as a whole (the query images included,
as compute_ap is run), ties in file order. Files that cannot be opened as images are left out
with a note: Paris ships 20 (HTML error pages saved as ``.jpg``, listed in the publisher's
``corrupt.txt``), which common practice (e.g. Gordo et al.'s deep-retrieval evaluation) drops
from the ranked list while compute_ap still counts them among the positives of the unchanged
ground truth; so does this task.

Query boxes are read as ``x1 y1 x2 y2`` and checked before any model loads: a box that is not
finite, inverted, holds no pixel or lies wholly outside its image is refused in one line naming
the query file; a box reaching past the edge is clipped to the image
(:mod:`bindkit.tasks.instance._boxes`). A ground truth where no query has a good or ok image is
refused (there is no AP to compute); a query without any is left out of the mean with a warning,
as compute_ap would give it no number.

Line endings: each ground-truth line is stripped, so files saved with Windows line endings
(CRLF) read as the published LF files do. ``compute_ap.cpp`` reads lines with ``getline`` and
would keep the ``\r`` in each name, finding none of them; bindkit is lenient there on purpose
(a CRLF copy names the same images), and its scores equal compute_ap's on the LF files.

The Sculptures 6k task (:mod:`bindkit.tasks.instance.sculptures6k`) reads the same file
convention (:mod:`bindkit.tasks.instance._oxford`).
"""

from __future__ import annotations

from bindkit.tasks.instance._oxford import OxfordConvention, convention_metadata


class Oxford5k(OxfordConvention):
    metadata = convention_metadata(
        "oxford5k",
        "Oxford Buildings 5K",
        "https://www.robots.ox.ac.uk/~vgg/data/oxbuildings/ (gt_files_170407.tgz, "
        "oxbuild_images-v1.tgz)",
        "Philbin et al., CVPR 2007; compute_ap.cpp of the Oxford Buildings page",
        "oxbuild_images",
    )
    prefix = "oxc1_"
    images_dir = "oxbuild_images"


class Paris6k(OxfordConvention):
    metadata = convention_metadata(
        "paris6k",
        "Paris 6K",
        "https://www.robots.ox.ac.uk/~vgg/data/parisbuildings/ (paris_120310.tgz, "
        "paris_1-v1.tgz, paris_2-v1.tgz)",
        "Philbin et al., CVPR 2008; compute_ap.cpp of the Oxford Buildings page",
        "paris",
    )
    images_dir = "paris"
