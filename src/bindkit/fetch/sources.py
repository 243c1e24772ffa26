"""Where each benchmark's files are published, in the layout its task reads (one table).

A plan is a list of parts: :class:`Url` (a file, or an archive to extract) and :class:`Hub` (a
Hugging Face dataset snapshot). ``sha256`` is pinned where the file is fixed: the publishers
but ILIAS give no checksums, so the pinned values are bindkit's, computed from the
publisher's repository at the commit the URL names (SugarCrepe, SugarCrepe++) or from the
files as published (SICK train and trial); other files are checked for their length and
kind (an HTML page, or first bytes unlike a ``.pkl``/``.json``/``.zip``/``.tgz``/``.tar``/
``.mat``, is refused); a part whose publisher lists checksums (ILIAS' ``checksums.txt``) is checked
against that list. Hub parts name the commit they are pinned to where one is known (``revision``);
an unpinned Hub part says so in one line when it is fetched. ``verified`` says how the source was
checked and where each URL was found; ``tests/test_fetch_plans.py`` builds each plan's archives in
the publisher's layout, serves them from 127.0.0.1, fetches them and loads the result with the
task's own reader. :data:`MANUAL` names the tasks with published data but no plan, and why.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SUGARCREPE_COMMIT = "0047054b243992f0fad63d6f64f7544862daf846"
SCPP_COMMIT = "c083bbf039a5ca215acaf25e7ee736d2ea6f3864"
COCO_VAL2017 = "http://images.cocodataset.org/zips/val2017.zip"
KARPATHY = "https://storage.googleapis.com/sfr-vision-language-research/datasets"
REVISITOP = "URLs and the flattened jpg/ layout from filipradenovic/revisitop python/download.py"
VGG_OXFORD = "https://www.robots.ox.ac.uk/~vgg/data/oxbuildings"
VGG_PARIS = "https://www.robots.ox.ac.uk/~vgg/data/parisbuildings"
ILIAS_DATA = "https://vrg.fel.cvut.cz/ilias_data"
ILIAS_COMMIT = "e81029e50e8e907b990d3e22898663cd81de1bfd"  # github.com/ilias-vrg/ilias
INSTRE_FTP = "ftp://ftp.irisa.fr/local/texmex/corpus/instre"
MMEB_EVAL_REVISION = "2f069730be515ea60778413777816b53e2d2a697"  # "Delete wrong image (#2)"
BIVLC_REVISION = "0c504074819f3fa83d5d3f37018f8b43c05bda82"
DRIVE = "https://drive.usercontent.google.com/download?export=download&confirm=t&id="
PUG_SPAR_REVISION = "c06d287045116b4ea056552d8c277ba4f9e75519"  # "Update README.md"
# github.com/kdariina/CLIP-not-BoW-unimodally data_loading/{clevr,pug}.py (gdown ids), read
# through its fork jayn2u/CLIP-not-BoW-unimodally at this commit
KOISHIGARINA = "jayn2u/CLIP-not-BoW-unimodally@03087ddd4e09a8f6a021f5c2d7ab2b9a78bf9390"
PUG_SPARE_WORLDS = {
    "Desert": "1JW0sApth_vaHgMrX1zhHa-L9SZVfUF1H",
    "Island": "17GuDFHt0z8nofC2TXDOxQnb1Wp9O4Ws4",
    "MountainRange": "18xaLyYq1hEEUuOe6KoSKfjvHsqvMitfA",
    "Spaceship": "1mVEg_eLWkGjeuCd3iXPbpx5MFdXgqBnu",
}


@dataclass(frozen=True)
class Url:
    """One HTTP(S) download (or FTP: INSTRE's host, which cannot resume a cut-off transfer).

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
        sha256_list: The publisher's checksum list (lines ``<sha256> <url>``); the line naming
            this URL gives the hash to check, when bindkit pins none itself.
        part: The named part of a large plan it belongs to (``--part``; "" in every run).
    """

    url: str
    to: str
    sha256: str | None = None
    extract: bool = False
    strip: int = 0
    flatten: bool = False
    images: bool = False
    sha256_list: str | None = None
    part: str = ""


@dataclass(frozen=True)
class Archive:
    """An archive in a Hub snapshot, unpacked after download and then removed.

    Attributes:
        pieces: Its file in the snapshot, or the pieces that, joined in this order, make it
            (VLM2Vec's ``cat video_qa.tar.gz-0{0..4} | tar -xz``).
        into: The folder it is unpacked into, relative to the snapshot's folder.
        strip: Leading path components dropped from each member (``MMEB/x`` → ``x``).
    """

    pieces: tuple[str, ...]
    into: str
    strip: int = 0


@dataclass(frozen=True)
class Hub:
    """A Hugging Face dataset snapshot (``snapshot_download``, ``repo_type="dataset"``).

    Attributes:
        repo_id: The dataset.
        allow: ``allow_patterns``: the files to fetch.
        moves: ``(path in the snapshot, path in the task folder)`` renames after download.
        archives: Archives in the snapshot to unpack (:class:`Archive`).
        gated: The dataset asks users to accept its terms first (then a token is needed).
        images: Part of the images (left out by ``--no-images``).
        revision: The commit it is pinned to (None: unpinned, the latest is fetched, and a
            line says so).
        to: The folder under the task folder it lands in ("": the task folder itself).
        part: The named part of a large plan it belongs to (``--part``; "" in every run).
    """

    repo_id: str
    allow: tuple[str, ...]
    moves: tuple[tuple[str, str], ...] = ()
    archives: tuple[Archive, ...] = ()
    gated: bool = False
    images: bool = False
    revision: str | None = None
    to: str = ""
    part: str = ""


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
    data: str = ""  # the path under the folder that --data names ("": the folder itself)

    @property
    def part_names(self) -> tuple[str, ...]:
        """The named parts (``--part``), in plan order."""
        return tuple(dict.fromkeys(p.part for p in self.parts if p.part))


def _sugarcrepe(repo: str, commit: str, hashes: dict[str, str]) -> tuple[Part, ...]:
    raw = f"https://raw.githubusercontent.com/{repo}/{commit}/data"
    files = tuple(
        Url(f"{raw}/{name}.json", f"{name}.json", digest) for name, digest in hashes.items()
    )
    return (*files, Url(COCO_VAL2017, "images", extract=True, strip=1, images=True))


ILIAS_TAXONOMY_SHA256 = "52ecd253e75c084ae6eae62d04516e8ac99554f6d8aed3f76c6d6c65d31638cb"


def _ilias() -> tuple[Part, ...]:
    """ILIAS as download_ilias.sh lays it out: ``image_ids/``, ``ilias_core/`` (the tar, checked
    against the publisher's ``checksums.txt``) and the repository's ``misc/taxonomy.json``."""
    ids = tuple(
        Url(f"{ILIAS_DATA}/image_ids/{name}", f"image_ids/{name}")
        for name in ("image_query_ids.txt", "text_query_ids.txt", "positive_ids.txt")
    )
    taxonomy = Url(
        f"https://raw.githubusercontent.com/ilias-vrg/ilias/{ILIAS_COMMIT}/misc/taxonomy.json",
        "taxonomy.json",
        ILIAS_TAXONOMY_SHA256,
    )
    core = Url(
        f"{ILIAS_DATA}/ilias_core.tar",
        "",
        extract=True,
        images=True,
        sha256_list=f"{ILIAS_DATA}/checksums.txt",
    )
    return (*ids, taxonomy, core)


MMEB_V2 = "TIGER-Lab/MMEB-V2"
#: MMEB-V2's annotation datasets per part, as the task's readers name them (a test checks them
#: against :data:`bindkit.tasks.mmeb._mmeb_v2_data.SOURCES`).
MMEB_V2_ANNOTATIONS: dict[str, tuple[str, ...]] = {
    "image": ("ziyjiang/MMEB_Test_Instruct",),
    "video": (
        *(
            f"VLM2Vec/{name}"
            for name in (
                "Kinetics-700",
                "HMDB51",
                "UCF101",
                "Breakfast",
                "Video-MME",
                "EgoSchema",
                "ActivityNetQA",
                "SmthSmthV2",
                "NExTQA",
                "MVBench",
                "MSR-VTT",
                "MSVD",
                "DiDeMo",
                "VATEX",
                "QVHighlight",
                "Charades-STA",
                "MomentSeeker",
            )
        ),
        "lmms-lab/YouCook2",
    ),
    "visdoc": (
        *(
            f"vidore/{name}"
            for name in (
                "arxivqa_test_subsampled_beir",
                "docvqa_test_subsampled_beir",
                "infovqa_test_subsampled_beir",
                "tabfquad_test_subsampled_beir",
                "tatdqa_test_beir",
                "shiftproject_test_beir",
                "syntheticDocQA_artificial_intelligence_test_beir",
                "syntheticDocQA_energy_test_beir",
                "syntheticDocQA_government_reports_test_beir",
                "syntheticDocQA_healthcare_industry_test_beir",
                "esg_reports_human_labeled_v2",
                "biomedical_lectures_v2",
                "economics_reports_v2",
                "esg_reports_v2",
            )
        ),
        *(
            f"openbmb/VisRAG-Ret-Test-{name}"
            for name in (
                "ArxivQA",
                "ChartQA",
                "MP-DocVQA",
                "SlideVQA",
                "InfoVQA",
                "PlotQA",
            )
        ),
        *(
            f"VLM2Vec/{name}"
            for name in (
                "ViDoSeek-page-fixed",
                "ViDoSeek",
                "MMLongBench-page-fixed",
                "MMLongBench-doc",
            )
        ),
    ),
}
#: the annotation files a reader resolves (the card names the configs); no media
ANNOTATION_FILES = ("README.md", "*.parquet", "*.json", "*.jsonl")
FRAMES = "video-tasks/frames"


def _mmeb_v2() -> tuple[Part, ...]:
    """MMEB-V2 as VLM2Vec's download_data.sh unpacks it, plus each annotation dataset under
    ``<owner>/<name>``, in three parts (``--part image|video|visdoc``)."""
    image_media = Hub(
        MMEB_V2,
        ("image-tasks/mmeb_v1.tar.gz",),
        archives=(Archive(("image-tasks/mmeb_v1.tar.gz",), "image-tasks", strip=1),),
        images=True,
        part="image",
    )  # tar -xzvf mmeb_v1.tar.gz; mv MMEB/* .
    qa = tuple(f"{FRAMES}/video_qa.tar.gz-0{i}" for i in range(5))
    video_media = Hub(
        MMEB_V2,
        tuple(f"{FRAMES}/video_{g}.tar.gz" for g in ("cls", "mret", "ret")) + qa,
        archives=(
            Archive((f"{FRAMES}/video_cls.tar.gz",), f"{FRAMES}/video_cls"),
            Archive((f"{FRAMES}/video_mret.tar.gz",), FRAMES),  # holds video_mret/
            Archive((f"{FRAMES}/video_ret.tar.gz",), f"{FRAMES}/video_ret"),
            Archive(qa, FRAMES),  # cat video_qa.tar.gz-0{0..4} | tar -xzv
        ),
        images=True,
        part="video",
    )
    annotations = tuple(
        Hub(repo, ANNOTATION_FILES, to=repo, part=part)
        for part, repos in MMEB_V2_ANNOTATIONS.items()
        for repo in repos
    )
    media = {"image": image_media, "video": video_media}
    return tuple(
        p
        for part in MMEB_V2_ANNOTATIONS
        for p in (media.get(part), *annotations)
        if p and p.part == part
    )


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
        data="SICK_test_annotated.txt",
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
                archives=(Archive(("data/images.zip",), ""),),
                gated=True,
            ),
        ),
        verified="file names from the task's reader and the dataset card; gated, so not "
        "downloaded here; no commit of it found to pin",
    ),
    "colorswap": Plan(
        "colorswap",
        license="MIT (see the dataset card)",
        parts=(Hub("stanfordnlp/colorswap", ("data/*.parquet",)),),
        verified="parquet layout from the task's reader (data/*.parquet); no commit of it found "
        "to pin",
    ),
    "bivlc": Plan(
        "bivlc",
        license="MIT (see the dataset card); COCO images CC BY 4.0",
        parts=(Hub("imirandam/BiVLC", ("data/*.parquet",), revision=BIVLC_REVISION),),
        verified="parquet layout from the task's reader (data/*.parquet); pinned to the commit "
        "whose tree page (huggingface.co/datasets/imirandam/BiVLC/tree/0c50407…) lists "
        "data/test-0000{0,1}-of-00002-*.parquet",
    ),
    "clevr_binding": Plan(
        "clevr_binding",
        license="not stated by the publisher (CLEVR: CC BY 4.0)",
        parts=(Url(f"{DRIVE}1u2oCAsAOJeqR-09gwflEEvVQ75Fs0eD3", "", extract=True),),
        verified=f"the 2obj Google Drive id of CLEVRLoader.FILE_IDS ({KOISHIGARINA} "
        "data_loading/clevr.py), unzipped into the folder as its _prepare_dataset does "
        "(images_2obj/ and output_2obj.csv); no checksum is published and the Drive endpoint "
        "itself is not tested",
        note="unpinned: the publisher's Drive files carry no checksum",
    ),
    "pug_spare": Plan(
        "pug_spare",
        license="not stated; Unreal Engine NoAI assets: not for training or developing generative "
        "AI (the publisher's README)",
        parts=(
            Url(f"{DRIVE}1lGkG51-wKRhiIb__NkftvOud9QXEc41e", "PUG_SPARE.csv"),
            *(
                Url(f"{DRIVE}{file_id}", "", extract=True, images=True)
                for file_id in PUG_SPARE_WORLDS.values()
            ),
        ),
        verified=f"Google Drive ids of PUGSPARELoader ({KOISHIGARINA} data_loading/pug.py): the "
        "CSV, and one zip per world unzipped into the folder as its _prepare_dataset does "
        "(<world>/ folders); no checksum is published and the Drive endpoint itself is not tested",
        note="unpinned: the publisher's Drive files carry no checksum",
    ),
    "pug_spar": Plan(
        "pug_spar",
        license="CC BY-NC 4.0, not to be used to train generative AI models (the PUG LICENSE)",
        parts=(Hub("facebook/PUG_SPAR", ("data/*.parquet",), revision=PUG_SPAR_REVISION),),
        verified="parquet layout and columns from the dataset card (data/train-*, 35 shards); "
        "pinned to the latest commit its history page lists (c06d287, after 'Upload dataset' "
        "00bb5e2); the publisher's other copy, PUG_SPAR.tar.gz (16 GB, labels.csv + images, "
        "github.com/facebookresearch/PUG README), has no checksum and is read as well by --data",
        note="17 GB of parquet files, the images embedded in them",
    ),
    "mmeb": Plan(
        "mmeb",
        license="see the dataset card (per-source licences)",
        parts=(
            Hub("TIGER-Lab/MMEB-eval", ("*/test-*.parquet",), revision=MMEB_EVAL_REVISION),
            Hub(
                "TIGER-Lab/MMEB-eval",
                ("images.zip",),
                archives=(Archive(("images.zip",), "eval_images"),),
                images=True,
                revision=MMEB_EVAL_REVISION,
            ),
        ),
        verified="images.zip unzipped into eval_images/ as the VLM2Vec-based evaluations do; "
        "<subset>/test-*.parquet from the task's reader; pinned to the latest commit its "
        "history page lists (2f06973, after 'adding images.zip')",
    ),
    "oxford5k": Plan(
        "oxford5k",
        license="see the publisher (Flickr images, their owners' terms)",
        parts=(
            Url(f"{VGG_OXFORD}/gt_files_170407.tgz", "gt", extract=True, flatten=True),
            Url(
                f"{VGG_OXFORD}/oxbuild_images-v1.tgz",
                "oxbuild_images",
                extract=True,
                flatten=True,
                images=True,
            ),
        ),
        verified="URLs from the task's metadata (the VGG Oxford Buildings page) and from "
        "revisitop's python/download.py (oxbuild_images-v1.tgz); the ground truth unpacked into "
        "gt/ as facebookresearch/vissl RETRIEVAL_DATASETS.md does (tar -C lab), the images into "
        "oxbuild_images/ beside it (the reader's default)",
    ),
    "paris6k": Plan(
        "paris6k",
        license="see the publisher (Flickr images, their owners' terms)",
        parts=(
            Url(f"{VGG_PARIS}/paris_120310.tgz", "gt", extract=True, flatten=True),
            *(
                Url(f"{VGG_PARIS}/{name}", "paris", extract=True, flatten=True, images=True)
                for name in ("paris_1-v1.tgz", "paris_2-v1.tgz")
            ),
        ),
        verified="URLs from the task's metadata (the VGG Paris Buildings page) and revisitop's "
        "python/download.py (paris_{1,2}-v1.tgz); landmark folders flattened into paris/ as "
        "revisitop and vissl do, the ground truth into gt/ (vissl: tar -C lab)",
    ),
    "instre": Plan(
        "instre",
        license="see the publisher (research use)",
        parts=(
            Url(f"{INSTRE_FTP}/gnd_instre.mat", "gnd_instre.mat"),
            Url(f"{INSTRE_FTP}/instre.tar.gz", "", extract=True, images=True),
        ),
        verified="URLs and layout from aosokin/os2d (README: wget gnd_instre.mat and "
        "instre.tar.gz into data/instre, tar -xzf -C data/instre; its loader reads the images "
        "from that folder); FTP, so a cut-off transfer starts again rather than resuming",
        note="the FTP host gives no checksums and no resume; the images are 2.3 GB",
    ),
    "ilias": Plan(
        "ilias",
        license="CC BY 4.0 for the captured images; images from the web under their URL's "
        "licence (misc/ilias_core_captured.txt lists which)",
        parts=_ilias(),
        verified="URLs and layout from github.com/ilias-vrg/ilias download/download_ilias.sh "
        "(image_ids/ files, ilias_core.tar untarred into the folder, each checked against the "
        "publisher's checksums.txt) and misc/taxonomy.json at the pinned commit",
        note="the YFCC100M distractors (6.3 TB, --task-option distractors=N) and "
        "distractor_ids.txt.gz are not fetched: download_ilias.sh <dir> N fetches N shards",
    ),
    "ilias_fine": Plan(
        "ilias_fine",
        license="CC BY 4.0 for the captured images; images from the web under their URL's "
        "licence (misc/ilias_core_captured.txt lists which)",
        parts=_ilias(),
        verified="the ilias plan (the same folder; taxonomy.json is what ilias_fine adds)",
    ),
    "pods": Plan(
        "pods",
        license="MIT (the dataset card)",
        parts=(
            Url(
                "https://data.csail.mit.edu/personal_rep/pods.zip",
                "",
                extract=True,
                strip=1,
                images=True,
            ),
        ),
        verified="URL from ssundaram21/personalized-rep dataset/README.md and "
        "dataset/download_benchmarks.sh (unzip pods.zip in data/); its configs read "
        "./data/pods/pods_info.json, so the archive's one top folder pods/ is dropped",
    ),
    "mmeb_v2": Plan(
        "mmeb_v2",
        license="per source dataset: read each Hub dataset card (and the original dataset's "
        "terms for clips and pages) before redistributing anything",
        parts=_mmeb_v2(),
        verified="media archives and their unpacking from TIGER-AI-Lab/VLM2Vec "
        "experiments/public/data/download_data.sh; the annotation datasets from the task's "
        "readers (bindkit.tasks.mmeb._mmeb_v2_data.SOURCES, checked by a test), each "
        "snapshotted to <owner>/<name> as the README's table says",
        note="large: fetch one part at a time (--part image, video, visdoc); the video clips "
        "(video-tasks/videos/*.mp4) are not fetched (frames are); Hub parts are unpinned",
    ),
}

#: Tasks with published data but no plan: why, and what to do instead.
MANUAL: dict[str, str] = {
    "sculptures6k": "the VGG page (https://www.robots.ox.ac.uk/~vgg/data/sculptures6k/) names "
    "no archive bindkit could verify (its download links are reported down), so there is no "
    "plan; download the ground truth and the images by hand and pass --data and --image-root",
}
