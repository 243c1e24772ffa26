"""Instance retrieval: image queries (often cut to a box) ranked against an image database, by
mAP and its relatives (the revisited sets, Oxford5K/Paris6K, Sculptures 6k, INSTRE, ILIAS, PODS).
Shared: query boxes (:mod:`._boxes`), the crop, the ranked top list and the all-or-nothing image
check (:mod:`._base`)."""
