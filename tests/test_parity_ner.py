"""Parity: seqlab.metrics.ner against seqeval 1.2.2, seqlab.metrics.accuracy against scikit-learn.

Tolerance: none. Every entity set must be equal and every score bit-identical (same float64, same
nan-ness) to the reference, in default mode and in strict mode for each scheme.
"""

from __future__ import annotations

import random
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seqlab.base.errors import SeqlabError
from seqlab.metrics import accuracy as cls
from seqlab.metrics import entities, ner, undefined_metric

seqeval_labeling = pytest.importorskip("seqeval.metrics.sequence_labeling")
seqeval_v1 = pytest.importorskip("seqeval.metrics.v1")
seqeval_scheme = pytest.importorskip("seqeval.scheme")
sk_metrics = pytest.importorskip("sklearn.metrics")

SCHEME_CLASSES = {name: getattr(seqeval_scheme, name) for name in ("IOB1", "IOE1", "IOB2", "IOE2", "IOBES", "BILOU")}
PREFIXES = {"IOB1": "IOB", "IOE1": "IOE", "IOB2": "IOB", "IOE2": "IOE", "IOBES": "IOBES", "BILOU": "BILOU"}
TYPES = ("PER", "LOC", "ORG")
MANY_TYPES = tuple(f"T{k:02d}" for k in range(12))  # >= 8 types: numpy's pairwise summation matters in the means
ROOT = Path(__file__).resolve().parents[1]
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(autouse=True)
def _quiet():
    """seqeval and ours both warn on 0/0 ratios and odd tags; the values are what is compared here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def same(ours, theirs) -> bool:
    """Bit-identical numbers: equal values with equal signs (so -0.0 != 0.0), nan only where nan; same shape."""
    a, b = np.asarray(ours), np.asarray(theirs)
    if a.shape != b.shape:
        return False
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        a, b = a.astype(np.float64), b.astype(np.float64)
        return bool(np.array_equal(a, b, equal_nan=True) and np.array_equal(np.signbit(a), np.signbit(b)))
    return bool(np.array_equal(a, b))


def tag_strategy(prefixes: str, types: tuple[str, ...], odd: bool = False) -> st.SearchStrategy[str]:
    """Tags 'O' and PREFIX-TYPE; with ``odd``, also tags seqeval's default mode reads strangely."""
    tags = ["O"] + [f"{p}-{t}" for p in prefixes if p != "O" for t in types]
    if odd:
        tags += ["B", "I", "E", "S", ".", "O-PER", "U-PER", "L-LOC", "B-PER-X", "I-PER-X", "X-PER"]
    return st.sampled_from(tags)


@st.composite
def tag_pairs(draw, tags: st.SearchStrategy[str], max_len: int = 10) -> tuple[list[list[str]], list[list[str]]]:
    """(y_true, y_pred) of the same shape; y_pred keeps each gold tag or replaces it with a random one."""
    y_true = draw(st.lists(st.lists(tags, min_size=0, max_size=max_len), min_size=1, max_size=4))
    keep = st.booleans()
    y_pred = [[t if draw(keep) else draw(tags) for t in sentence] for sentence in y_true]
    return y_true, y_pred


def assert_scores_equal(y_true, y_pred, scheme_name: str | None) -> None:
    """Every average, every zero_division, the report dict and the score functions: bit-identical."""
    strict = scheme_name is not None
    kw_ours = {"mode": "strict", "scheme": scheme_name} if strict else {}
    scheme = SCHEME_CLASSES[scheme_name] if strict else None
    for zero_division in ("warn", 1):  # 0 takes the same path as 'warn', without the warning
        for average in (None, "micro", "macro", "weighted"):
            if strict:
                ref = seqeval_v1.precision_recall_fscore_support(y_true, y_pred, average=average, scheme=scheme,
                                                                 zero_division=zero_division)
            else:
                ref = seqeval_labeling.precision_recall_fscore_support(y_true, y_pred, average=average,
                                                                       zero_division=zero_division)
            got = ner.precision_recall_fscore_support(y_true, y_pred, average=average, zero_division=zero_division,
                                                      **kw_ours)
            for ours, theirs in zip(got, ref):
                assert same(ours, theirs), (average, zero_division, got, ref)
    for fn in ("f1_score", "precision_score", "recall_score"):
        ref = getattr(seqeval_labeling, fn)(y_true, y_pred, mode="strict" if strict else None, scheme=scheme)
        assert same(getattr(ner, fn)(y_true, y_pred, **kw_ours), ref), fn
    if any(ner.count_entities(y_true, y_pred, **kw_ours).types):  # seqeval's report needs at least one type
        ref = seqeval_labeling.classification_report(y_true, y_pred, digits=17, mode="strict" if strict else None,
                                                     scheme=scheme)
        assert ner.classification_report(y_true, y_pred, digits=17, **kw_ours) == ref
    scores = ner.entity_f1(y_true, y_pred, **kw_ours)
    p, r, f, _ = (seqeval_v1.precision_recall_fscore_support(y_true, y_pred, average="micro", scheme=scheme,
                                                             zero_division=0) if strict else
                  seqeval_labeling.precision_recall_fscore_support(y_true, y_pred, average="micro", zero_division=0))
    assert (scores["precision"], scores["recall"], scores["f1"]) == (p, r, f)
    assert all(type(v) is float for v in (scores["precision"], scores["recall"], scores["f1"]))


def seqeval_strict_entities(y, scheme_name: str) -> set[tuple]:
    return {e.to_tuple() for sentence in seqeval_scheme.Entities(y, SCHEME_CLASSES[scheme_name]).entities
            for e in sentence}


# --------------------------------------------------------------------------------------------
# hypothesis: random well- and ill-formed tag sequences


@SETTINGS
@given(tag_pairs(tag_strategy("BIESO", TYPES, odd=True)))
def test_default_mode_matches_seqeval(pair):
    y_true, y_pred = pair
    for y in (y_true, y_pred):
        assert entities.get_entities(y) == seqeval_labeling.get_entities(y)
    assert_scores_equal(y_true, y_pred, None)
    if any(y_true):
        assert ner.accuracy_score(y_true, y_pred) == seqeval_labeling.accuracy_score(y_true, y_pred)
    else:  # seqeval divides by zero here
        with pytest.raises(SeqlabError, match="empty"):
            ner.accuracy_score(y_true, y_pred)


@pytest.mark.parametrize("scheme_name", list(SCHEME_CLASSES))
@SETTINGS
@given(data=st.data())
def test_strict_mode_matches_seqeval(scheme_name, data):
    y_true, y_pred = data.draw(tag_pairs(tag_strategy(PREFIXES[scheme_name], TYPES)))
    for y in (y_true, y_pred):
        ours = entities.get_entities_strict(y, scheme_name)
        assert set(ours) == seqeval_strict_entities(y, scheme_name)
        assert len(ours) == len(set(ours))
    assert_scores_equal(y_true, y_pred, scheme_name)


@settings(max_examples=40, deadline=None)
@given(tag_pairs(tag_strategy("BIO", MANY_TYPES), max_len=30))
def test_many_types_macro_and_weighted_bit_identical(pair):
    """With >= 8 types numpy's pairwise sum and Python's sum can differ in the last bit (spec §2.6.7)."""
    y_true, y_pred = pair
    assert_scores_equal(y_true, y_pred, None)
    assert_scores_equal(y_true, y_pred, "IOB2")


def test_pairwise_summation_matters_for_many_types():
    """The means go through numpy (pairwise) and so does seqeval: this case separates the two sums."""
    values = np.array([0.1, 0.7, 0.3, 0.9, 0.2, 0.6, 0.8, 0.4, 0.5, 0.3333333333333333])
    assert np.mean(values) != sum(values.tolist()) / len(values)  # the hazard the test above guards against


# --------------------------------------------------------------------------------------------
# the worked examples of ../shared/specs/metrics.md


S1 = ([["O", "O", "O", "B-MISC", "I-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]],
      [["O", "O", "B-MISC", "I-MISC", "I-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]])
S2 = ([["B-PER", "I-PER", "O", "B-LOC", "O"]], [["I-PER", "I-PER", "O", "B-LOC", "I-ORG"]])
S3 = ([["S-PER", "O", "B-ORG", "I-ORG", "E-ORG", "O", "S-LOC"], ["B-LOC", "E-LOC", "O", "S-PER"]],
      [["S-PER", "O", "B-ORG", "I-ORG", "I-ORG", "O", "S-LOC"], ["B-LOC", "E-LOC", "O", "S-ORG"]])


def prf(y_true, y_pred, average, **kw):
    return tuple(ner.precision_recall_fscore_support(y_true, y_pred, average=average, **kw)[:3])


def test_s1_readme_example():
    expected_report = (
        "              precision    recall  f1-score   support\n\n"
        "        MISC       0.00      0.00      0.00         1\n"
        "         PER       1.00      1.00      1.00         1\n\n"
        "   micro avg       0.50      0.50      0.50         2\n"
        "   macro avg       0.50      0.50      0.50         2\n"
        "weighted avg       0.50      0.50      0.50         2\n"
    )
    for kw in ({}, {"mode": "strict", "scheme": "IOB2"}):
        assert ner.classification_report(*S1, **kw) == expected_report
        p, r, f, s = ner.precision_recall_fscore_support(*S1, average=None, **kw)
        assert p.tolist() == r.tolist() == f.tolist() == [0.0, 1.0] and s.tolist() == [1, 1]
        for average in ("micro", "macro", "weighted"):
            assert prf(*S1, average, **kw) == (0.5, 0.5, 0.5)
    assert ner.accuracy_score(*S1) == 0.8


def test_s2_ill_formed_prediction():
    assert entities.get_entities(S2[1]) == [("PER", 0, 1), ("LOC", 3, 3), ("ORG", 4, 4)]
    assert prf(*S2, "micro") == (0.6666666666666666, 1.0, 0.8)
    assert prf(*S2, "macro") == (0.6666666666666666,) * 3
    assert prf(*S2, "weighted") == (1.0, 1.0, 1.0)
    strict = {"mode": "strict", "scheme": "IOB2"}
    assert entities.get_entities_strict(S2[1], "IOB2") == [(0, "LOC", 3, 4)]
    assert prf(*S2, "micro", **strict) == (1.0, 0.5, 0.6666666666666666)
    assert prf(*S2, "macro", **strict) == prf(*S2, "weighted", **strict) == (0.5, 0.5, 0.5)
    # seqeval's report auto-detects the scheme in strict mode; ours does it only when asked
    auto = ner.classification_report(*S2, mode="strict", scheme="auto")
    assert auto == seqeval_labeling.classification_report(*S2, mode="strict")
    assert "   micro avg       1.00      0.50      0.67         2" in auto


def test_s3_iobes():
    assert prf(*S3, "micro") == (0.8, 0.8, 0.8000000000000002)  # not 2tp/(2tp+fp+fn)
    assert prf(*S3, "macro") == (0.8333333333333334, 0.8333333333333334, 0.7777777777777777)
    assert prf(*S3, "weighted") == (0.9, 0.8, 0.8)
    strict = {"mode": "strict", "scheme": "IOBES"}
    p, r, f, s = ner.precision_recall_fscore_support(*S3, average=None, **strict)
    assert (p.tolist(), r.tolist(), f.tolist(), s.tolist()) == ([1, 0, 1], [1, 0, 0.5], [1, 0, 0.6666666666666666],
                                                                [2, 1, 2])
    assert prf(*S3, "micro", **strict) == (0.75, 0.6, 0.6666666666666665)
    assert prf(*S3, "macro", **strict) == (0.6666666666666666, 0.5, 0.5555555555555555)
    assert prf(*S3, "weighted", **strict) == (0.8, 0.6, 0.6666666666666666)
    scores = ner.entity_f1(*S3)
    assert scores["f1"] == 0.8000000000000002
    assert scores["per_type"]["ORG"] == {"precision": 0.5, "recall": 1.0, "f1": 0.6666666666666666, "support": 1}


# spec §2.5: sequence -> (default spans (type, start, end_incl), strict IOB2 and IOB1 spans (type, start, end_excl))
ILL_FORMED_IOB = [
    ("B-PER I-PER O B-LOC", [("PER", 0, 1), ("LOC", 3, 3)], [("PER", 0, 2), ("LOC", 3, 4)], [("PER", 1, 2)]),
    ("I-PER I-PER O I-LOC", [("PER", 0, 1), ("LOC", 3, 3)], [], [("PER", 0, 2), ("LOC", 3, 4)]),
    ("O I-PER I-PER O", [("PER", 1, 2)], [], [("PER", 1, 3)]),
    ("B-PER I-LOC O", [("PER", 0, 0), ("LOC", 1, 1)], [("PER", 0, 1)], [("LOC", 1, 2)]),
    ("B-PER B-PER I-PER", [("PER", 0, 0), ("PER", 1, 2)], [("PER", 0, 1), ("PER", 1, 3)], [("PER", 1, 3)]),
    ("I-PER B-PER I-PER", [("PER", 0, 0), ("PER", 1, 2)], [("PER", 1, 3)], [("PER", 0, 1), ("PER", 1, 3)]),
    ("B-PER I-PER I-LOC I-LOC", [("PER", 0, 1), ("LOC", 2, 3)], [("PER", 0, 2)], [("PER", 1, 2), ("LOC", 2, 4)]),
    ("B-PER O I-PER", [("PER", 0, 0), ("PER", 2, 2)], [("PER", 0, 1)], [("PER", 2, 3)]),
    ("B I O B", [("_", 0, 1), ("_", 3, 3)], [("_", 0, 2), ("_", 3, 4)], [("_", 1, 2)]),
]
ILL_FORMED_IOBES = [
    ("S-PER O B-LOC I-LOC E-LOC", [("PER", 0, 0), ("LOC", 2, 4)], [("PER", 0, 1), ("LOC", 2, 5)]),
    ("B-PER I-PER O", [("PER", 0, 1)], []),
    ("B-PER E-PER E-PER", [("PER", 0, 1), ("PER", 2, 2)], [("PER", 0, 2)]),
    ("S-PER I-PER E-PER", [("PER", 0, 0), ("PER", 1, 2)], [("PER", 0, 1)]),
    ("I-PER E-PER", [("PER", 0, 1)], []),
    ("E-PER", [("PER", 0, 0)], []),
    ("B-PER I-PER E-LOC", [("PER", 0, 1), ("LOC", 2, 2)], []),
    ("B-PER S-PER", [("PER", 0, 0), ("PER", 1, 1)], [("PER", 1, 2)]),
    ("B-PER E-PER I-PER", [("PER", 0, 1), ("PER", 2, 2)], [("PER", 0, 2)]),
]


def strict_spans(tags: list[str], scheme: str) -> list[tuple]:
    return [(t, s, e) for _, t, s, e in entities.get_entities_strict([tags], scheme)]


@pytest.mark.parametrize("seq, default, iob2, iob1", ILL_FORMED_IOB)
def test_spec_ill_formed_iob(seq, default, iob2, iob1):
    tags = seq.split()
    assert entities.get_entities(tags) == default
    assert strict_spans(tags, "IOB2") == iob2
    assert strict_spans(tags, "IOB1") == iob1


@pytest.mark.parametrize("seq, default, iobes", ILL_FORMED_IOBES)
def test_spec_ill_formed_iobes(seq, default, iobes):
    tags = seq.split()
    assert entities.get_entities(tags) == default
    assert strict_spans(tags, "IOBES") == iobes


def test_degenerate_inputs_match_seqeval():
    no_entities = ([["O", "O"], []], [["O", "O"], []])
    for average in ("micro", "weighted"):
        for zd in (0, 1):
            ours = ner.precision_recall_fscore_support(*no_entities, average=average, zero_division=zd)
            ref = seqeval_labeling.precision_recall_fscore_support(*no_entities, average=average, zero_division=zd)
            assert all(same(a, b) for a, b in zip(ours, ref)), (average, zd, ours, ref)
    assert np.isnan(ner.f1_score(*no_entities, average="macro"))  # macro over zero types is nan, as in seqeval
    only_pred = ([["O"]], [["B-PER"]])
    for average in (None, "micro", "macro", "weighted"):
        for zd in (0, 1):
            ours = ner.precision_recall_fscore_support(*only_pred, average=average, zero_division=zd)
            ref = seqeval_labeling.precision_recall_fscore_support(*only_pred, average=average, zero_division=zd)
            assert all(same(a, b) for a, b in zip(ours, ref)), (average, zd)


def test_suffix_tags_match_seqeval():
    y_true = [["PER-B", "PER-I", "O", "LOC-B"], ["ORG-S", "O"]]
    y_pred = [["PER-B", "PER-I", "LOC-I", "LOC-B"], ["ORG-B", "ORG-E"]]
    assert entities.get_entities(y_true, suffix=True) == seqeval_labeling.get_entities(y_true, suffix=True)
    ours = ner.classification_report(y_true, y_pred, suffix=True, digits=17)
    assert ours == seqeval_labeling.classification_report(y_true, y_pred, suffix=True, digits=17)


def test_warns_like_seqeval_on_undefined_ratio():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ner.precision_score([["O"]], [["O"]])
    assert any(issubclass(w.category, ner.UndefinedMetricWarning) for w in caught)


def test_a_filter_written_for_seqeval_silences_seqlab():
    """seqeval warns with sklearn's UndefinedMetricWarning; ours subclasses it (issue #14)."""
    sk_warning = pytest.importorskip("sklearn.exceptions").UndefinedMetricWarning
    assert issubclass(ner.UndefinedMetricWarning, sk_warning)
    assert ner.UndefinedMetricWarning is undefined_metric.UndefinedMetricWarning  # one class
    no_prediction = ([["B-PER", "O"]], [["O", "O"]])  # no predicted entity: precision is 0/0
    for filtered in (False, True):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if filtered:
                warnings.filterwarnings("ignore", category=sk_warning)
            seqeval_labeling.precision_score(*no_prediction)
            n_theirs = len(caught)
            ner.precision_score(*no_prediction)
        theirs, ours = caught[:n_theirs], caught[n_theirs:]
        assert [str(w.message) for w in ours] == [str(w.message) for w in theirs]
        assert len(ours) == (0 if filtered else 1)
        assert all(issubclass(w.category, sk_warning) for w in caught)


def test_the_warning_class_is_built_lazily_and_pickles():
    """Importing seqlab.metrics.ner does not import scikit-learn; the class, one for the three paths to it,
    pickles as itself."""
    code = ("import pickle, sys, warnings\n"
            "import seqlab.metrics.ner as ner\n"
            "assert 'sklearn' not in sys.modules, 'sklearn imported by seqlab.metrics.ner'\n"
            "from seqlab.metrics import UndefinedMetricWarning\n"
            "import sklearn.exceptions\n"
            "from seqlab.metrics.undefined_metric import UndefinedMetricWarning as defined\n"
            "assert UndefinedMetricWarning is ner.UndefinedMetricWarning is defined\n"
            "assert issubclass(UndefinedMetricWarning, sklearn.exceptions.UndefinedMetricWarning)\n"
            "assert pickle.loads(pickle.dumps(UndefinedMetricWarning)) is UndefinedMetricWarning\n"
            "assert repr(UndefinedMetricWarning) == "
            "\"<class 'seqlab.metrics.undefined_metric.UndefinedMetricWarning'>\"\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


# --------------------------------------------------------------------------------------------
# bad input: one-line SeqlabError instead of seqeval's silent fallbacks and raw exceptions


def test_strict_without_scheme_is_an_error():
    with pytest.raises(SeqlabError, match="needs a scheme"):
        ner.f1_score(*S2, mode="strict")
    with pytest.raises(SeqlabError, match="needs a scheme"):
        ner.entity_f1(*S2, mode="strict")


@pytest.mark.parametrize("call, match", [
    (lambda: ner.f1_score([["O", "O"]], [["O"]]), "sentence 0 has 2 gold tags but 1 predicted"),
    (lambda: ner.f1_score([["O"]], [["O"], ["O"]]), "1 sentences but y_pred has 2"),
    (lambda: ner.f1_score(["O"], ["O"]), "list of tag sequences"),
    (lambda: ner.f1_score([["E-PER"]], [["O"]], mode="strict", scheme="IOB2"), "invalid tag 'E-PER' in sentence 0"),
    (lambda: ner.f1_score([["X-PER"]], [["O"]], mode="strict", scheme="IOBES"), "allowed prefixes are I|O|B|E|S"),
    (lambda: ner.f1_score([["O"]], [["O"]], mode="strict", scheme="IOB3"), "unknown tagging scheme"),
    (lambda: ner.f1_score([["O"]], [["O"]], mode="lenient"), "unknown mode"),
    (lambda: ner.f1_score([["O"]], [["O"]], average="samples"), "average must be one of"),
    (lambda: ner.f1_score([["O"]], [["O"]], zero_division=2), "zero_division"),
    (lambda: ner.f1_score([["B-PER", ""]], [["O", "O"]]), "empty tag"),
    (lambda: ner.classification_report([["I-PER", "O"]], [["O", "O"]], mode="strict", scheme="auto"),
     "cannot detect the tagging scheme"),
])
def test_bad_input_raises_seqlab_error(call, match):
    with pytest.raises(SeqlabError, match=match):
        call()


def test_schemes_accept_seqeval_classes_and_names():
    for name, scheme_class in SCHEME_CLASSES.items():
        assert entities.resolve_scheme(scheme_class) is entities.resolve_scheme(name.lower()) is entities.SCHEMES[name]
    assert entities.detect_scheme(S3[0]).name == "IOBES"
    assert entities.detect_scheme(S1[0]).name == "IOB2"


# --------------------------------------------------------------------------------------------
# the real CoNLL-2003 test split, gold vs a deterministically perturbed prediction


def perturb(gold: list[list[str]], seed: int, rate: float = 0.12) -> list[list[str]]:
    """Replace about ``rate`` of the tags by random tags of the corpus (ill-formed I- starts included)."""
    rng = random.Random(seed)
    labels = sorted({t for sentence in gold for t in sentence})
    return [[rng.choice(labels) if rng.random() < rate else t for t in sentence] for sentence in gold]


@pytest.mark.parametrize("path, schemes", [("conll2003/iob2/test.txt", ("IOB2",)),
                                           ("conll2003/eng.testb", ("IOB1",))])
def test_conll_test_split_reports_match_seqeval(shared_data, path, schemes):
    from seqlab.data.conll import read_conll

    gold = [list(s.tags) for s in read_conll(shared_data / path)]
    pred = perturb(gold, seed=2003)
    assert entities.get_entities(gold) == seqeval_labeling.get_entities(gold)
    assert entities.get_entities(pred) == seqeval_labeling.get_entities(pred)
    runs = [(None, None)] + [("strict", s) for s in schemes]
    for mode, scheme in runs:
        ref_scheme = SCHEME_CLASSES[scheme] if scheme else None
        ref = seqeval_labeling.classification_report(gold, pred, output_dict=True, mode=mode, scheme=ref_scheme)
        ours = ner.classification_report(gold, pred, output_dict=True, mode=mode, scheme=scheme)
        assert list(ours) == list(ref) == ["LOC", "MISC", "ORG", "PER", "micro avg", "macro avg", "weighted avg"]
        for row in ref:
            for key in ("precision", "recall", "f1-score", "support"):
                assert same(ours[row][key], ref[row][key]), (mode, row, key, ours[row][key], ref[row][key])
        if mode is None and path.startswith("conll2003/iob2"):  # the text layout once; the numbers every time
            text = seqeval_labeling.classification_report(gold, pred, digits=6)
            assert ner.classification_report(gold, pred, digits=6) == text
        scores = ner.entity_f1(gold, pred, mode=mode, scheme=scheme)
        assert scores["f1"] == ref["micro avg"]["f1-score"]
        assert {t: v["support"] for t, v in scores["per_type"].items()} == {"LOC": 1668, "MISC": 702, "ORG": 1661,
                                                                              "PER": 1617}
        assert 0.5 < scores["f1"] < 0.95  # the perturbation really perturbs
    assert ner.accuracy_score(gold, pred) == seqeval_labeling.accuracy_score(gold, pred)


# --------------------------------------------------------------------------------------------
# classification metrics vs scikit-learn


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from("abcdefghijk"), st.sampled_from("abcdefghijkl")), min_size=1, max_size=60))
def test_accuracy_macro_f1_confusion_match_sklearn(pairs):
    y_true = [t for t, _ in pairs]
    y_pred = [p for _, p in pairs]
    assert cls.accuracy(y_true, y_pred) == sk_metrics.accuracy_score(y_true, y_pred)
    ours = cls.macro_f1(y_true, y_pred)
    ref = sk_metrics.f1_score(y_true, y_pred, average="macro", zero_division=0)
    assert ours == ref and type(ours) is float, (ours, ref)
    labels, counts = cls.confusion_matrix(y_true, y_pred)
    assert np.array_equal(counts, sk_metrics.confusion_matrix(y_true, y_pred, labels=labels))
    assert labels == sorted(set(y_true) | set(y_pred))
    assert cls.classification_scores(y_true, y_pred) == {"accuracy": cls.accuracy(y_true, y_pred), "macro_f1": ours}


def test_classification_metrics_hand_computed():
    y_true = ["0", "0", "1", "1", "2"]
    y_pred = ["0", "1", "1", "1", "0"]
    # F1: class 0 = 2·1/(2+2) = 0.5, class 1 = 2·2/(2+3) = 0.8, class 2 = 0/(1+0) = 0
    assert cls.macro_f1(y_true, y_pred) == np.mean([0.5, 0.8, 0.0])
    assert cls.accuracy(y_true, y_pred) == 0.6
    with pytest.raises(SeqlabError, match="5 gold labels but 4 predictions"):
        cls.accuracy(y_true, y_pred[:4])
    with pytest.raises(SeqlabError, match="no examples"):
        cls.macro_f1([], [])


@pytest.mark.slow
def test_trained_tagger_predictions_match_seqeval(shared_data, tmp_path):
    """A BiLSTM tagger trained briefly on CoNLL-2003: on its predictions for eng.testb our entity F1 equals
    seqeval's (default and strict IOB2), bit for bit."""
    import seqeval.metrics as sm
    from seqeval.scheme import IOB2

    import seqlab
    from seqlab.tasks import resolve
    from seqlab.data.conll import read_conll

    conll = shared_data / "conll2003"
    cfg = resolve("ner-bilstm", [f'data.train="{conll / "iob2" / "train.txt"}"',
                                 f'data.valid="{conll / "iob2" / "valid.txt"}"',
                                 f'data.test="{conll / "iob2" / "test.txt"}"', "train.max_steps=150",
                                 "train.progress=false", "train.eval_every=0", "train.save_every=0"])
    tagger = seqlab.load(seqlab.train(cfg, tmp_path / "ner", log=lambda *a, **k: None))
    sentences = read_conll(conll / "iob2" / "test.txt")
    gold = [list(s.tags) for s in sentences]
    pred = [r["tags"] for r in tagger.predict([" ".join(s.tokens) for s in sentences])]
    assert sum(g != p for g, p in zip(gold, pred)) > 0  # a real, imperfect model
    ours = ner.entity_f1(gold, pred)
    assert (ours["precision"], ours["recall"], ours["f1"]) == (
        sm.precision_score(gold, pred), sm.recall_score(gold, pred), sm.f1_score(gold, pred))
    strict = ner.entity_f1(gold, pred, mode="strict", scheme="IOB2")
    assert strict["f1"] == sm.f1_score(gold, pred, mode="strict", scheme=IOB2)
