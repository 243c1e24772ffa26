"""Where each benchmark's files are published, in the layout its task reads (one table).

A plan is a list of parts: :class:`Url` (a file, or an archive to extract) and :class:`Hub` (a
Hugging Face dataset snapshot). ``sha256`` is pinned where the file is fixed: the publishers
give no checksums for any of these, so the pinned values are bindkit's, computed from the
publisher's repository at the commit the URL names (SugarCrepe, SugarCrepe++) or from the
files as published (SICK train and trial); other files are checked for their length and
kind (an HTML page, or first bytes unlike a ``.pkl``/``.json``/``.zip``/``.tgz``, is refused).
``verified`` says how the source was checked; docs/benchmarks.md has the same table.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SUGARCREPE_COMMIT = "0047054b243992f0fad63d6f64f7544862daf846"
SCPP_COMMIT = "c083bbf039a5ca215acaf25e7ee736d2ea6f3864"
COCO_VAL2017 = "http://images.cocodataset.org/zips/val2017.zip"
KARPATHY = "https://storage.googleapis.com/sfr-vision-language-research/datasets"
REVISITOP = "URLs and the flattened jpg/ layout from filipradenovic/revisitop python/download.py"
DRIVE = "https://drive.usercontent.google.com/download?export=download&confirm=t&id="


@dataclass(frozen=True)
class Url:
    """One HTTP(S) download.

    Attributes:
        url: Where it is published.
        to: Its file name in the task folder; for an archive, the folder it is extracted into
            (``""``: the task folder itself).
        sha256: The content's hash, when bindkit pins one (checked; a mismatch is refused).
        extract: Unpack the archive (zip or tar) and remove it afterwards.
        strip: Leading path components dropped from each archive member (``val2017/x.jpg`` with
            strip 1 lands as ``x.jpg``).
        flatten: Keep only the members' file names (revisitop's nested Paris folders).
        images: Part of the images (left out by ``--no-images``).
    """

    url: str
    to: str
    sha256: str | None = None
    extract: bool = False
    strip: int = 0
    flatten: bool = False
    images: bool = False


@dataclass(frozen=True)
class Hub:
    """A Hugging Face dataset snapshot (``snapshot_download``, ``repo_type="dataset"``).

    Attributes:
        repo_id: The dataset.
        allow: ``allow_patterns``: the files to fetch.
        moves: ``(path in the snapshot, path in the task folder)`` renames after download.
        extract: Archives in the snapshot to unpack: ``(archive path, folder)``.
        gated: The dataset asks users to accept its terms first (then a token is needed).
        images: Part of the images (left out by ``--no-images``).
    """

    repo_id: str
    allow: tuple[str, ...]
    moves: tuple[tuple[str, str], ...] = ()
    extract: tuple[tuple[str, str], ...] = ()
    gated: bool = False
    images: bool = False


Part = Url | Hub


@dataclass(frozen=True)
class Plan:
    """How to fetch one task's data."""

    task: str
    license: str
    parts: tuple[Part, ...]
    verified: str
    note: str = ""
    folder: str | None = None  # under $BINDKIT_DATA (default: the task's data_dir or its name)
    use: str = field(default="")  # how to point eval at it when --data is more than the folder


def _sugarcrepe(repo: str, commit: str, hashes: dict[str, str]) -> tuple[Part, ...]:
    raw = f"https://raw.githubusercontent.com/{repo}/{commit}/data"
    files = tuple(
        Url(f"{raw}/{name}.json", f"{name}.json", digest) for name, digest in hashes.items()
    )
    return (*files, Url(COCO_VAL2017, "images", extract=True, strip=1, images=True))


SOURCES: dict[str, Plan] = {
    "sugarcrepe": Plan(
        "sugarcrepe",
        license="MIT (annotations, RAIVNLab/sugar-crepe); COCO val2017 images: CC BY 4.0 / "
        "Flickr terms of use",
        parts=_sugarcrepe(
            "RAIVNLab/sugar-crepe",
            SUGARCREPE_COMMIT,
            {
                "add_att": "012d88d729693d193760e6f3393b06a1cf874380a9db0062e937201199fe044d",
                "add_obj": "1b9d76b93139a937b8dc1ada92a4f05ecc821bb3c291d752428bafadd4bb0682",
                "replace_att": "9fe55fd4c0a9ad1f85d486d9f6d0215b41f867eb025026e7f7b5ce44352545ee",
                "replace_obj": "9d299600639947e9d15281a9ded1382b376cf4ea088a8d08a1314bfe76e81898",
                "replace_rel": "356bcc2fc4c6aed3f4d9fd50acc58489bb1fe70c28791f9368d4cbf9ea39cdc9",
                "swap_att": "7a7ce04e5c4c80412b48c6f0c1347fb1a2f5d54c0be6aa429b64d390e442f8d0",
                "swap_obj": "073cdb8e253d053614e80710834d9773b09dbc1dd0a412f6f9492262caa1dcad",
            },
        ),
        verified="data/*.json read in the repository at the pinned commit; images per its README",
    ),
    "sugarcrepe_pp": Plan(
        "sugarcrepe_pp",
        license="CC BY 4.0 (Sri-Harsha/scpp README; its LICENSE file says MIT); COCO val2017 "
        "images: CC BY 4.0 / Flickr terms of use",
        parts=_sugarcrepe(
            "Sri-Harsha/scpp",
            SCPP_COMMIT,
            {
                "replace_att": "6826413592894754eeca02aeebbcbbc8b95a7456998abcc714e71c033ce6fe87",
                "replace_obj": "5c6dc499ec8f511a8aa4ec1b7b5eb0eca90317488abe36ec39573355e2d361ab",
                "replace_rel": "040fb95d3f0619bf515db60879e99709a87a5e9b4f524ec3403b127243480fd4",
                "swap_att": "450d0fd9fcad3e6f44950dc634e7f901ab1c6d9c60a569ade5ae8ffb3d203ad8",
                "swap_obj": "5f33cae824de431a7ecd3c5de6301f689815f9497aa36d96b154bbaf117b201b",
            },
        ),
        verified="data/*.json read in the repository at the pinned commit",
    ),
    "sts": Plan(
        "sts",
        license="CC BY-NC-SA 3.0 (SICK)",
        parts=tuple(
            Url(
                f"https://raw.githubusercontent.com/brmson/dataset-sts/master/data/sts/sick2014/{name}",
                name,
                digest,
            )
            for name, digest in (
                (
                    "SICK_train.txt",
                    "266cf8047149bd1d68138dd30439f3122bff30069740ac6705bb6197d9f1b48e",
                ),
                (
                    "SICK_trial.txt",
                    "5a88cfb62f8c6bd2a3cce0f2421ba2cb8c2be5ab4a800f6f01e2c64aafb7db56",
                ),
                ("SICK_test_annotated.txt", None),
            )
        ),
        verified="train/trial files and hashes as published in brmson/dataset-sts; the test "
        "file is named by that folder's README",
        folder="sick",
        use="--task sts --data $BINDKIT_DATA/sick/SICK_test_annotated.txt",
    ),
    "roxford5k": Plan(
        "roxford5k",
        license="ground truth: revisitop (research use); images: Flickr, their owners' terms",
        parts=(
            Url(
                "http://cmp.felk.cvut.cz/revisitop/data/datasets/roxford5k/gnd_roxford5k.pkl",
                "gnd_roxford5k.pkl",
            ),
            Url(
                "https://www.robots.ox.ac.uk/~vgg/data/oxbuildings/oxbuild_images-v1.tgz",
                "jpg",
                extract=True,
                flatten=True,
                images=True,
            ),
        ),
        verified=REVISITOP,
    ),
    "rparis6k": Plan(
        "rparis6k",
        license="ground truth: revisitop (research use); images: Flickr, their owners' terms",
        parts=(
            Url(
                "http://cmp.felk.cvut.cz/revisitop/data/datasets/rparis6k/gnd_rparis6k.pkl",
                "gnd_rparis6k.pkl",
            ),
            *(
                Url(
                    f"https://www.robots.ox.ac.uk/~vgg/data/parisbuildings/{name}",
                    "jpg",
                    extract=True,
                    flatten=True,
                    images=True,
                )
                for name in ("paris_1-v1.tgz", "paris_2-v1.tgz")
            ),
        ),
        verified=REVISITOP,
    ),
    "aro": Plan(
        "aro",
        license="MIT (mertyg/vision-language-models-are-bows); Visual Genome images CC BY 4.0; "
        "Karpathy splits: as hosted for Salesforce's BLIP",
        parts=(
            Url(f"{DRIVE}1kX2iCHEv0CADL8dSO1nMdW-V0NqIAiP3", "visual_genome_relation.json"),
            Url(f"{DRIVE}13tWvOrNOLHxl3Rm9cR3geAdHx2qR3-Tw", "visual_genome_attribution.json"),
            Url(f"{KARPATHY}/coco_karpathy_test.json", "coco_karpathy_test.json"),
            Url(f"{KARPATHY}/flickr30k_test.json", "flickr30k_test.json"),
            Url(f"{DRIVE}1qaPlrwhGNMrR3a11iopZUT_GPP_LrgP9", "", extract=True, images=True),
        ),
        verified="Google Drive ids and Karpathy URLs from the repository's dataset_zoo/"
        "aro_datasets.py (it uses gdown); the Drive endpoint itself is not tested",
        note="COCO val2014 (order subsets) and Flickr30k images are not fetched: Flickr30k needs "
        "its own request form; COCO: http://images.cocodataset.org/zips/val2014.zip into val2014/",
    ),
    "winoground": Plan(
        "winoground",
        license="Winoground licence agreement (research use; Getty Images terms), in the dataset "
        "files",
        parts=(
            Hub(
                "facebook/winoground",
                ("data/examples.jsonl", "data/images.zip"),
                moves=(("data/examples.jsonl", "examples.jsonl"),),
                extract=(("data/images.zip", ""),),
                gated=True,
            ),
        ),
        verified="file names from the task's reader and the dataset card; gated, so not "
        "downloaded here",
    ),
    "colorswap": Plan(
        "colorswap",
        license="MIT (see the dataset card)",
        parts=(Hub("stanfordnlp/colorswap", ("data/*.parquet",)),),
        verified="parquet layout from the task's reader (data/*.parquet)",
    ),
    "bivlc": Plan(
        "bivlc",
        license="MIT (see the dataset card); COCO images CC BY 4.0",
        parts=(Hub("imirandam/BiVLC", ("data/*.parquet",)),),
        verified="parquet layout from the task's reader (data/*.parquet)",
    ),
    "mmeb": Plan(
        "mmeb",
        license="see the dataset card (per-source licences)",
        parts=(
            Hub("TIGER-Lab/MMEB-eval", ("*/test-*.parquet",)),
            Hub(
                "TIGER-Lab/MMEB-eval",
                ("images.zip",),
                extract=(("images.zip", "eval_images"),),
                images=True,
            ),
        ),
        verified="images.zip unzipped into eval_images/ as the VLM2Vec-based evaluations do; "
        "<subset>/test-*.parquet from the task's reader",
    ),
}
