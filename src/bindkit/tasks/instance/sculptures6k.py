"""Sculptures 6k (Arandjelović and Zisserman, ICCV 2011, "Smooth object retrieval using a bag of
boundaries"): 70 queries of Henry Moore and Rodin sculptures, cropped to their query boxes,
retrieve from 6,340 Flickr images; mAP with good and ok images relevant and junk images skipped,
by the Oxford Buildings ``compute_ap.cpp`` AP, as for Oxford5K.

Files: the ground truth in the Oxford Buildings convention (per query ``<name>_query.txt`` with
one line ``<image> x1 y1 x2 y2`` and ``<name>_good.txt``, ``<name>_ok.txt``, ``<name>_junk.txt``)
as the VGG page publishes it, and the images: every ``*.jpg`` under ``--image-root`` (default
``DATA/images``; the release's ``train/`` and ``test/`` halves together make the 6,340), matched
to the ground truth by file stem. The ground truth names images of both halves, so the image
root must hold both; whether published results rank within the test half only is an open
question (see docs/experiments/). See :mod:`bindkit.tasks.instance.oxford_paris` for the
reading and scoring rules they share.
"""

from __future__ import annotations

from bindkit.tasks.instance._oxford import OxfordConvention, convention_metadata


class Sculptures6k(OxfordConvention):
    metadata = convention_metadata(
        "sculptures6k",
        "Sculptures 6k",
        "https://www.robots.ox.ac.uk/~vgg/data/sculptures6k/ (ground truth and images)",
        "Arandjelović and Zisserman, ICCV 2011; compute_ap.cpp of the Oxford Buildings page",
        "images",
        fetchable=False,  # no plan: bindkit.fetch.sources.MANUAL says why
    )
    images_dir = "images"
    missing_fix = (
        "its ground truth names images of both halves, so pass --image-root with the folder "
        "holding train/ and test/ (default DATA/images), published at "
        "https://www.robots.ox.ac.uk/~vgg/data/sculptures6k/"
    )
