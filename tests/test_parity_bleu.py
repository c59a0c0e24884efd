"""BLEU and chrF against sacreBLEU 2.6.0 (test extra): exact equality (==), never approx.

Real data: the 16 WMT17 en-de systems in ../shared/data/wmt17_en_de_systems and sacreBLEU's recorded
scores beside them. Generated data: hypothesis corpora over all options. Worked examples: spec §1.11.
Signatures are compared without their version field (ours carries seqlab's version).
"""

from __future__ import annotations

import csv
import logging

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import seqlab
from seqlab.base.errors import SeqlabError
from seqlab.metrics import BLEU, corpus_bleu, corpus_chrf, sentence_bleu
from seqlab.metrics.bleu import clipped_counts, clipped_counts_reference, extract_ngrams
from seqlab.metrics.bleu_tokenizers import TOKENIZERS, tokenize_13a, tokenize_13a_reference

sacrebleu = pytest.importorskip("sacrebleu")
from sacrebleu.metrics import BLEU as SacreBLEU  # noqa: E402
from sacrebleu.metrics import CHRF as SacreCHRF  # noqa: E402

logging.getLogger("sacrebleu").setLevel(logging.ERROR)  # its sentence_score warns about effective order

WMT = "wmt17_en_de_systems"


def read_lines(path) -> list[str]:
    """One segment per \\n-terminated line, BOM kept (as sacreBLEU's CLI and the fixture's scores)."""
    with open(path, encoding="utf-8", newline="\n") as f:
        return [line.rstrip("\n") for line in f]


def unversioned(signature: str) -> str:
    head, version = signature.rsplit("|version:", 1)
    assert version
    return head


def assert_same(ours, theirs) -> None:
    """Exact equality of everything a BLEUScore reports."""
    assert ours.score == theirs.score
    assert ours.precisions == theirs.precisions
    assert ours.bp == theirs.bp
    assert ours.sys_len == theirs.sys_len
    assert ours.ref_len == theirs.ref_len
    assert ours.counts == theirs.counts
    assert ours.totals == theirs.totals
    assert ours.verbose_score == theirs._verbose


@pytest.fixture(scope="module")
def wmt(shared_data):
    """(reference lines, {system file name: hypothesis lines}, {system file name: expected row})."""
    folder = shared_data / WMT
    systems = {p.name: read_lines(p) for p in sorted((folder / "systems").iterdir())}
    with open(folder / "sacrebleu_expected_scores.tsv", encoding="utf-8") as f:
        expected = {row["system_file"]: row for row in csv.DictReader(f, delimiter="\t")}
    assert len(systems) == 16 and set(systems) == set(expected)
    return read_lines(folder / "newstest2017-ende-ref.de"), systems, expected


# ---- (1) the 16 WMT17 systems ---------------------------------------------------------------

TSV_COLUMN = {("13a", False): "bleu_13a", ("intl", False): "bleu_intl", ("none", False): "bleu_tok_none",
              ("13a", True): "bleu_13a_lowercase"}


CONFIGS = pytest.mark.parametrize(("tokenize", "lowercase"), list(TSV_COLUMN), ids=["13a", "intl", "none", "13a-lc"])


FEW = ["newstest2017.online-A.0.en-de", "newstest2017.PROMT-Rule-based.4735.en-de",
       "newstest2017.uedin-nmt.4722.en-de", "newstest2017.online-F.0.en-de"]


def _equal_recorded_scores(wmt, tokenize, lowercase, names=None):
    ref, systems, expected = wmt
    metric = BLEU(tokenize=tokenize, lowercase=lowercase)
    for name in names or systems:
        ours = metric.corpus_score(systems[name], [ref])
        row = expected[name]
        assert f"{ours.score:.6f}" == row[TSV_COLUMN[tokenize, lowercase]], name
        if (tokenize, lowercase) == ("13a", False):
            assert f"{ours.bp:.6f}" == row["bp"]
            assert (ours.sys_len, ours.ref_len) == (int(row["sys_len"]), int(row["ref_len"]))
            assert " ".join(f"{p:.4f}" for p in ours.precisions) == row["precisions_1to4"]
            assert abs(ours.score - float(row["mteval_v13a_bleu_from_sacrebleu_test_sh"])) < 0.01


def test_wmt17_systems_equal_recorded_scores_13a(wmt):
    """All 16 full systems against sacreBLEU's scores recorded beside the data (6 decimals)."""
    _equal_recorded_scores(wmt, "13a", False)


@pytest.mark.parametrize(("tokenize", "lowercase"), list(TSV_COLUMN)[1:], ids=["intl", "none", "13a-lc"])
def test_wmt17_systems_equal_recorded_scores_other_options(wmt, tokenize, lowercase):
    """Four full systems here; all 16 in the slow test below."""
    _equal_recorded_scores(wmt, tokenize, lowercase, FEW)


@pytest.mark.slow
@CONFIGS
def test_wmt17_all_systems_equal_recorded_scores(wmt, tokenize, lowercase):
    _equal_recorded_scores(wmt, tokenize, lowercase)


def _equal_sacrebleu_on_systems(wmt, tokenize, lowercase, n_lines):
    ref, systems, _ = wmt
    theirs_metric = SacreBLEU(tokenize=tokenize, lowercase=lowercase, references=[ref[:n_lines]])
    ours_metric = BLEU(tokenize=tokenize, lowercase=lowercase)
    for hyps in systems.values():
        ours = ours_metric.corpus_score(hyps[:n_lines], [ref[:n_lines]])
        assert_same(ours, theirs_metric.corpus_score(hyps[:n_lines], None))
    assert unversioned(ours.signature) == unversioned(theirs_metric.get_signature().format())


@CONFIGS
def test_wmt17_systems_equal_sacrebleu(wmt, tokenize, lowercase):
    """All 16 systems, their first 250 segments (the full files in the slow test below), bit for bit."""
    _equal_sacrebleu_on_systems(wmt, tokenize, lowercase, 250)


@pytest.mark.slow
@CONFIGS
def test_wmt17_full_systems_equal_sacrebleu(wmt, tokenize, lowercase):
    _equal_sacrebleu_on_systems(wmt, tokenize, lowercase, None)


def test_online_a_keeps_its_byte_order_mark(wmt):
    """online-A starts with U+FEFF, which sacreBLEU scores as text (its recorded score, checked above,
    includes it): the first token is "\ufeff" + word, so stripping the BOM changes the statistics."""
    ref, systems, _ = wmt
    first = systems["newstest2017.online-A.0.en-de"][0]
    assert first.startswith("\ufeff")
    assert sentence_bleu(first, [ref[0]]).counts != sentence_bleu(first.lstrip("\ufeff"), [ref[0]]).counts


def test_wmt17_multiple_references_and_char_tokenizer(wmt):
    """Two and three reference streams (other systems as extra references), tok char, against sacreBLEU."""
    ref, systems, _ = wmt
    names = sorted(systems)
    hyps = systems[names[0]][:300]
    refs = [ref[:300], systems[names[1]][:300], systems[names[2]][:300]]
    for streams, tokenize in [(refs[:2], "13a"), (refs, "intl"), (refs[:1], "char")]:
        assert_same(BLEU(tokenize=tokenize).corpus_score(hyps, streams),
                    SacreBLEU(tokenize=tokenize).corpus_score(hyps, streams))


# ---- (2) sentence BLEU ----------------------------------------------------------------------


def test_sentence_bleu_equals_recorded_first300(wmt, shared_data):
    ref, systems, _ = wmt
    with open(shared_data / WMT / "sacrebleu_sentence_scores_first300.tsv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    assert len(rows) == 900
    ours = {name: BLEU(effective_order=True).sentence_scores(systems[name][:300], [ref[:300]])
            for name in {row["system_file"] for row in rows}}
    for row in rows:
        score = ours[row["system_file"]][int(row["line_index0"])]
        assert f"{score.score:.6f}" == row["sentence_bleu_13a_exp_effective_order"], row
        assert unversioned(score.signature) == "nrefs:1|case:mixed|eff:yes|tok:13a|smooth:exp"


def test_sentence_bleu_equals_sacrebleu_sentence_bleu(wmt):
    ref, systems, _ = wmt
    for name in ["newstest2017.online-A.0.en-de", "newstest2017.PROMT-Rule-based.4735.en-de"]:
        for hyp, r in zip(systems[name][:150], ref[:150]):
            assert_same(sentence_bleu(hyp, [r]), sacrebleu.sentence_bleu(hyp, [r]))


# ---- (3) generated corpora ------------------------------------------------------------------

# Words that exercise every tokenizer rule: 13a's symbols, . and , next to digits or not, hyphens
# after digits, XML entities and <skipped>, Unicode punctuation/symbols/numbers, case, NBSP (a
# separator for str.split) and zero-width space (not one), BOM.
WORDS = ["the", "The", "cat", "CAT", "mat", "a", "on", "is", "sat", "dog", "ÉCOLE", "école", "straße", "İ",
         "3.14", "1,000", "1990.", "U.S.A.", "e.g.", "...", ",", ".", "-", "--", "9-9", "x-1", "well-known",
         "it's", "don't", "'", '"', "&quot;", "&amp;lt;", "&gt;", "<skipped>", "a<skipped>b", "(x)", "[y]",
         "$5", "50%", "#1", "@", "~", "€100", "±5", "«q»", "“s”", "中文，测试。", "—", "٣", "½", "\u00a0",
         "\u200b", "\ufeff", "\t", "a.b", "a,b", ".5", "5.", "5-", "-5", ",,", ".,.", "x..y", "9..9"]
segment = st.lists(st.sampled_from(WORDS), max_size=9).map(" ".join) | st.text(max_size=12)
SMOOTH = st.sampled_from([("exp", None), ("floor", None), ("floor", 0.01), ("floor", 0.5), ("add-k", None),
                          ("add-k", 0.5), ("add-k", 2), ("add-k", 0), ("none", None)])


@st.composite
def corpora(draw):
    n_segments = draw(st.integers(1, 4))
    n_streams = draw(st.integers(1, 3))
    hyps = draw(st.lists(segment, min_size=n_segments, max_size=n_segments))
    streams = []
    for k in range(n_streams):
        # beyond the first stream a reference may be missing (None): a variable number of references
        ref = segment if k == 0 else (segment | st.none())
        streams.append(draw(st.lists(ref, min_size=n_segments, max_size=n_segments)))
    return hyps, streams


OPTIONS = st.fixed_dictionaries({
    "tokenize": st.sampled_from(sorted(TOKENIZERS)),
    "lowercase": st.booleans(),
    "effective_order": st.booleans(),
    "max_ngram_order": st.sampled_from([4, 4, 1, 2, 5]),
})


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpus=corpora(), options=OPTIONS, smooth=SMOOTH)
def test_generated_corpora_equal_sacrebleu(corpus, options, smooth):
    hyps, streams = corpus
    smooth_method, smooth_value = smooth
    kwargs = dict(options, smooth_method=smooth_method, smooth_value=smooth_value)
    ours_metric, theirs_metric = BLEU(**kwargs), SacreBLEU(**kwargs)
    ours = ours_metric.corpus_score(hyps, streams)
    assert_same(ours, theirs_metric.corpus_score(hyps, streams))
    assert unversioned(ours.signature) == unversioned(theirs_metric.get_signature().format())
    for i, score in enumerate(ours_metric.sentence_scores(hyps, streams)):
        assert_same(score, SacreBLEU(**kwargs).sentence_score(hyps[i], [s[i] for s in streams]))


@settings(max_examples=800, deadline=None)
@given(st.lists(st.sampled_from(WORDS + list(".,-0123456789 x&;<>\n")), max_size=14).map("".join))
def test_13a_fast_path_equals_reference_regexes(line):
    assert tokenize_13a(line) == tokenize_13a_reference(line)
    assert tokenize_13a(line) == sacrebleu.tokenizers.tokenizer_13a.Tokenizer13a()(line).split()


@settings(max_examples=300, deadline=None)
@given(hyp=st.lists(st.sampled_from(["a", "b", "c"]), max_size=12),
       refs=st.lists(st.lists(st.sampled_from(["a", "b", "c"]), max_size=12), min_size=1, max_size=3))
def test_clipped_counts_equal_counter_reference(hyp, refs):
    """The set-of-occurrences counts equal the Counter loop, with heavy n-gram repetition."""
    merged = [set().union(*sets) for sets in zip(*(extract_ngrams(r, 4) for r in refs))]
    correct, total = clipped_counts_reference(hyp, refs, 4)
    assert clipped_counts(hyp, merged) == correct
    assert total == [max(len(hyp) - n, 0) for n in range(4)]


# ---- (4) worked examples (spec §1.11) ----------------------------------------------------------

E1 = ("the cat is on the mat", "there is a cat on the mat")


@pytest.mark.parametrize(("kwargs", "score", "counts", "totals"), [
    ({}, 29.05925408079185, [5, 2, 1, 0], [6, 5, 4, 3]),
    ({"effective_order": True}, 29.05925408079185, [5, 2, 1, 0], [6, 5, 4, 3]),
    ({"smooth_method": "floor"}, 19.43309443637607, [5, 2, 1, 0], [6, 5, 4, 3]),
    ({"smooth_method": "add-k"}, 38.244129131513816, [5, 3, 2, 1], [6, 6, 5, 4]),
    ({"smooth_method": "none"}, 0.0, [5, 2, 1, 0], [6, 5, 4, 3]),
    ({"max_ngram_order": 2}, 48.871645172969465, [5, 2], [6, 5]),
])
def test_worked_example_e1(kwargs, score, counts, totals):
    result = BLEU(**kwargs).corpus_score([E1[0]], [[E1[1]]])
    assert (result.score, result.counts, result.totals) == (score, counts, totals)
    assert result.bp == 0.846481724890614


def test_worked_example_e1_strings_and_entry_points():
    result = corpus_bleu([E1[0]], [[E1[1]]])
    assert result.precisions == [83.33333333333333, 40.0, 25.0, 16.666666666666668]
    line = "29.06 83.3/40.0/25.0/16.7 (BP = 0.846 ratio = 0.857 hyp_len = 6 ref_len = 7)"
    assert str(result) == f"BLEU = {line}"
    assert result.format(signature=unversioned(result.signature) + "|version:2.6.0") == (
        f"BLEU|nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0 = {line}")
    assert result.format(width=4).startswith("BLEU = 29.0593 83.3/40.0/")
    assert result.format(score_only=True) == "29.06"
    assert sentence_bleu(*E1[:1], [E1[1]]).score == 29.05925408079185
    assert sentence_bleu(E1[0], [E1[1]], smooth_method="floor").score == 19.43309443637607
    raw = BLEU(tokenize="none", smooth_method="floor", effective_order=True)  # sacrebleu.raw_corpus_bleu
    assert raw.corpus_score([E1[0]], [[E1[1]]]).score == 19.43309443637607


def test_worked_examples_e2_to_e9():
    # E2 effective order
    assert corpus_bleu(["the cat"], [["the cat sat"]]).score == 0.0
    e2 = sentence_bleu("the cat", ["the cat sat"])
    assert (e2.score, e2.precisions, e2.bp) == (60.653065971263366, [100.0, 100.0, 0.0, 0.0], 0.6065306597126334)
    assert sentence_bleu("the cat", ["the cat sat"], smooth_method="none").score == 60.653065971263366
    addk = corpus_bleu(["the cat"], [["the cat sat"]], smooth_method="add-k")
    assert (addk.score, addk.counts, addk.totals) == (60.653065971263366, [2, 2, 1, 1], [2, 2, 1, 1])
    assert corpus_bleu(["the"], [["the cat sat"]], smooth_method="add-k").score == 13.533528323661276
    # E3 two zero-match orders
    e3 = (["the cat the mat sat"], [["the cat sat on the mat"]])
    assert corpus_bleu(*e3).precisions == [100.0, 50.0, 16.666666666666668, 12.5]
    for method, value, score in [("exp", None, 26.15611844567672), ("floor", None, 13.910597740964956),
                                 ("add-k", None, 38.71538698781761), ("add-k", 0.5, 29.06069298023142),
                                 ("none", None, 0.0)]:
        assert corpus_bleu(*e3, smooth_method=method, smooth_value=value).score == score
    half = corpus_bleu(*e3, smooth_method="add-k", smooth_value=0.5)
    assert (half.counts, half.totals) == ([5, 2.5, 0.5, 0.5], [5, 4.5, 3.5, 2.5])
    # E4 clipping
    e4 = corpus_bleu(["the the the the the the the"], [["the cat is on the mat"]])
    assert (e4.score, e4.counts, e4.precisions) == (
        7.809849842300637, [2, 0, 0, 0], [28.571428571428573, 8.333333333333334, 5.0, 3.125])
    # E5 multiple references
    hyps = ["the cat is on the mat", "a dog runs"]
    refs = [["there is a cat on the mat", "the dog is running"], ["the cat sits on the mat", "a dog runs fast"]]
    e5 = corpus_bleu(hyps, refs)
    assert (e5.score, e5.counts, e5.totals, e5.sys_len, e5.ref_len, e5.bp) == (
        41.8013428848349, [9, 5, 2, 0], [9, 7, 5, 3], 9, 10, 0.8948393168143697)
    assert e5.signature.startswith("nrefs:2|")
    assert sentence_bleu(hyps[0], [r[0] for r in refs]).score == 39.76353643835254
    assert sentence_bleu(hyps[1], [r[1] for r in refs]).score == 71.65313105737896
    # E6 a corpus of three segments
    e6 = corpus_bleu(["the cat is on the mat", "there is a dog", "hello world !"],
                     [["there is a cat on the mat", "there is a dog here", "hello world"]])
    assert (e6.score, e6.counts, e6.totals, e6.bp) == (44.718135113554574, [11, 6, 3, 1], [13, 10, 7, 4],
                                                       0.925961078642316)
    # E7 case, E8 tokenisation
    assert corpus_bleu(["The Cat is on the mat"], [["the cat is on the mat"]]).score == 50.81327481546149
    assert corpus_bleu(["The Cat is on the mat"], [["the cat is on the mat"]], lowercase=True).score == (
        100.00000000000004)
    assert corpus_bleu(["the cat sat on the mat ."], [["the cat sat on the mat."]]).score == 100.00000000000004
    # E9 degenerate
    empty = corpus_bleu([""], [["the cat"]])
    assert (empty.score, empty.bp, empty.sys_len, empty.ref_len) == (0.0, 0.0, 0, 2)
    no_ref = corpus_bleu(["the cat"], [[""]])
    assert (no_ref.score, no_ref.bp, no_ref.ref_len, no_ref.ratio) == (0.0, 1.0, 0, 0)
    for method in ["exp", "floor", "add-k", "none"]:
        none = corpus_bleu(["foo bar"], [["the cat"]], smooth_method=method)
        assert (none.score, none.precisions) == (0.0, [0.0] * 4)


def test_13a_and_intl_table_rows():
    """A few rows of the spec's tokenizer table (§1.3)."""
    assert tokenize_13a("It's 3.14 and 1,000,000.") == "It's 3.14 and 1,000,000 .".split()
    assert tokenize_13a("&quot;Hi&quot; &amp; &lt;b&gt;") == ['"', "Hi", '"', "&", "<", "b", ">"]
    assert tokenize_13a("9--9") == ["9", "-", "-9"]
    assert TOKENIZERS["intl"]("It's 3.14 and 1,000,000.") == "It ' s 3.14 and 1,000,000.".split()
    assert TOKENIZERS["intl"]("€100 ±5") == ["€", "100", "±", "5"]
    assert TOKENIZERS["char"]("ab c.") == ["a", "b", "c", "."]


# ---- (5) signatures -------------------------------------------------------------------------


@pytest.mark.parametrize(("kwargs", "streams", "expected"), [
    ({}, 1, "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp"),
    ({"smooth_method": "floor"}, 1, "nrefs:1|case:mixed|eff:no|tok:13a|smooth:floor[0.10]"),
    ({"smooth_method": "floor", "smooth_value": 0.01}, 1, "nrefs:1|case:mixed|eff:no|tok:13a|smooth:floor[0.01]"),
    ({"smooth_method": "add-k"}, 1, "nrefs:1|case:mixed|eff:no|tok:13a|smooth:add-k[1.00]"),
    ({"lowercase": True, "effective_order": True, "tokenize": "intl"}, 1,
     "nrefs:1|case:lc|eff:yes|tok:intl|smooth:exp"),
    ({}, 2, "nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp"),
    ({}, "var", "nrefs:var|case:mixed|eff:no|tok:13a|smooth:exp"),
])
def test_signature(kwargs, streams, expected):
    refs = [["a b c", "d e"]] * (2 if streams == "var" else streams)
    if streams == "var":
        refs = [refs[0], ["x y", None]]
    result = BLEU(**kwargs).corpus_score(["a b c", "d e"], refs)
    assert result.signature == f"{expected}|version:{seqlab.__version__}"
    theirs = SacreBLEU(**kwargs)
    theirs.corpus_score(["a b c", "d e"], refs)
    assert unversioned(theirs.get_signature().format()) == expected


def test_signature_short_form_and_version():
    assert BLEU().signature(1, short=True) == f"#:1|c:mixed|e:no|tok:13a|s:exp|v:{seqlab.__version__}"
    metric = SacreBLEU()
    metric.corpus_score(["a"], [["a"]])
    assert BLEU(signature_version="2.6.0").signature(1) == metric.get_signature().format()
    assert BLEU(signature_version="2.6.0").signature(1, short=True) == metric.get_signature().format(short=True)


# ---- chrF -----------------------------------------------------------------------------------


def test_chrf_equals_sacrebleu_and_recorded_scores(wmt):
    ref, systems, expected = wmt
    name = "newstest2017.online-A.0.en-de"
    assert f"{corpus_chrf(systems[name], [ref]).score:.6f}" == expected[name]["chrf2"]
    hyps = systems["newstest2017.uedin-nmt.4722.en-de"][:400]
    ours, theirs_metric = corpus_chrf(hyps, [ref[:400]]), SacreCHRF()
    assert ours.score == theirs_metric.corpus_score(hyps, [ref[:400]]).score
    assert unversioned(ours.signature) == unversioned(theirs_metric.get_signature().format())
    assert ours.format(width=1) == f"chrF2 = {ours.score:.1f}"


@pytest.mark.slow
def test_chrf_all_systems_equal_recorded_scores(wmt):
    ref, systems, expected = wmt
    for name, hyps in systems.items():
        assert f"{corpus_chrf(hyps, [ref]).score:.6f}" == expected[name]["chrf2"], name


@settings(max_examples=150, deadline=None)
@given(corpus=corpora(), lowercase=st.booleans(), whitespace=st.booleans(), beta=st.sampled_from([2, 2, 0, 1, 3]))
def test_chrf_generated_corpora_equal_sacrebleu(corpus, lowercase, whitespace, beta):
    hyps, streams = corpus
    theirs = SacreCHRF(lowercase=lowercase, whitespace=whitespace, beta=beta)
    assert corpus_chrf(hyps, streams, lowercase=lowercase, whitespace=whitespace, beta=beta).score == (
        theirs.corpus_score(hyps, streams).score)


def test_chrf_beta_0_is_precision_only_as_in_sacrebleu(wmt):
    """sacreBLEU accepts CHRF(beta=0): chrF0, the mean character n-gram precision (issue #14)."""
    ref, systems, _ = wmt
    hyps = systems["newstest2017.uedin-nmt.4722.en-de"][:300]
    ours, theirs = corpus_chrf(hyps, [ref[:300]], beta=0), SacreCHRF(beta=0).corpus_score(hyps, [ref[:300]])
    assert ours.score == theirs.score
    assert ours.format(width=2) == theirs.format(width=2) == f"chrF0 = {ours.score:.2f}"
    # several references: the best one per segment is chosen by chrF0 too
    refs = [["the cat sat", "hello world"], ["a cat sat down", None]]
    hyps = ["the cat sat down", "hello there world"]
    assert corpus_chrf(hyps, refs, beta=0).score == SacreCHRF(beta=0).corpus_score(hyps, refs).score
    assert corpus_chrf(hyps, refs, beta=0).score != corpus_chrf(hyps, refs, beta=2).score


# ---- a segment with no reference: refused, as sacreBLEU fails on it (issue #14) --------------------

NO_REFERENCE = [
    (["a b c", "x y"], [["a b c", None]]),  # one stream, the second segment's reference missing
    (["a b c", "x y"], [["a b c", None], ["a b", None]]),  # every stream misses it
    (["x y"], [[None]]),
]


@pytest.mark.parametrize(("hyps", "refs"), NO_REFERENCE)
@pytest.mark.parametrize("metric", ["bleu", "chrf"])
def test_segment_without_reference_is_refused_as_by_sacrebleu(hyps, refs, metric):
    theirs = SacreBLEU() if metric == "bleu" else SacreCHRF()
    with pytest.raises((TypeError, IndexError, ValueError)):  # sacreBLEU: TypeError (BLEU), IndexError/ValueError (chrF)
        theirs.corpus_score(hyps, refs)
    ours = corpus_bleu if metric == "bleu" else corpus_chrf
    with pytest.raises(SeqlabError, match=f"segment {len(hyps)} has no reference"):
        ours(hyps, refs)


def test_sentence_without_reference_is_refused_as_by_sacrebleu():
    with pytest.raises(TypeError):
        SacreBLEU(effective_order=True).sentence_score("a b", [None])
    with pytest.raises(SeqlabError, match="segment 1 has no reference"):
        sentence_bleu("a b", [None])
    with pytest.raises(SeqlabError, match="segment 1 has no reference"):
        BLEU().sentence_scores(["a b"], [[None], [None]])


# ---- stricter input than sacreBLEU (deliberate deviations) ---------------------------------------


@pytest.mark.parametrize(("call", "message"), [
    (lambda: corpus_bleu(["a", "b"], [["a"]]), "reference stream 1 has 1 segments but there are 2"),
    (lambda: corpus_bleu(["a"], ["a"]), "list of reference streams"),
    (lambda: corpus_bleu("a", [["a"]]), "hypotheses must be a list"),
    (lambda: corpus_bleu([], [[]]), "no hypotheses"),
    (lambda: corpus_bleu([None], [["a"]]), "every hypothesis must be a string"),
    (lambda: corpus_bleu(["a"], [[1]]), "every reference must be a string"),
    (lambda: BLEU(tokenize="zh"), "unknown tokenizer 'zh'"),
    (lambda: BLEU(smooth_method="add-one"), "unknown smoothing method"),
    (lambda: BLEU(smooth_method="floor", smooth_value=-1), "smooth_value must be"),
    (lambda: BLEU(max_ngram_order=0), "max_ngram_order must be"),
    (lambda: corpus_chrf(["a"], [[None]]), "segment 1 has no reference"),
    (lambda: corpus_chrf(["a"], [["a"]], beta=-1), "beta must be an integer >= 0"),
    (lambda: corpus_chrf(["a"], [["a"]], char_order=0), "char_order must be an integer >= 1"),
])
def test_bad_input_is_one_clear_error(call, message):
    with pytest.raises(SeqlabError, match=message):
        call()
