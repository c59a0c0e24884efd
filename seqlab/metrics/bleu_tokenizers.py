"""BLEU's tokenizers, each identical to sacreBLEU 2.6.0's (../shared/specs/metrics.md §1.3): ``13a``
(mteval-v13a, the default), ``intl`` (Unicode punctuation and symbols), ``char`` and ``none``.

``tokenize_13a`` is the fast path (``re.split`` and padding, scanning only the marks . and , for their two
rules and skipping rules that cannot match); ``tokenize_13a_reference`` is sacreBLEU's ``re.sub`` chain beside
it, and a test checks that the two agree. ``regex`` (Unicode classes) is imported on the first ``intl`` call.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import regex


# --------------------------------------------------------------------------------------------
# Tokenizers (§1.3). Each maps a (lowercased, right-stripped) line to its list of tokens; sacreBLEU
# returns the tokens joined by spaces and splits them again, which gives the same list.
# --------------------------------------------------------------------------------------------

# mteval-v13a's four substitutions, as (pattern, replacement) in sacreBLEU's order (§1.3 step 6).
_13A_RULES = [
    (re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])"), r" \1 "),  # 6.1 pad ASCII symbols
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),  # 6.2 split . or , after a non-digit
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),  # 6.3 split . or , before a non-digit
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),  # 6.4 split - after a digit
]
_SYMBOL, _DASH_AFTER_DIGIT = _13A_RULES[0][0], _13A_RULES[3][0]


def _13a_unescape(line: str) -> str:
    """Steps 1-4 of 13a: drop <skipped> and hyphenated line breaks, unescape four XML entities."""
    line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        line = line.replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
    return line


def tokenize_13a_reference(line: str) -> list[str]:
    """13a as sacreBLEU writes it: unescape, pad with one space each side, four ``re.sub``."""
    line = f" {_13a_unescape(line)} "
    for pattern, replacement in _13A_RULES:
        line = pattern.sub(replacement, line)
    return line.split()


def _pad_group(pattern: re.Pattern, line: str, group: int) -> str:
    """``pattern.sub`` for a replacement that puts spaces around capture ``group`` and keeps the rest.

    ``pattern.split`` finds the same leftmost non-overlapping matches as ``pattern.sub`` and returns
    [text, group 1, .., group k, text, ...], so padding every ``group``-th item and joining gives
    exactly the substituted string without a per-match Python template expansion.
    """
    parts = pattern.split(line)
    step = pattern.groups + 1
    parts[group::step] = [f" {g} " for g in parts[group::step]]
    return "".join(parts)


_MARK = re.compile(r"([.,])")
_DIGITS = "0123456789"


def _split_marks_after_non_digit(line: str) -> str:
    r"""Rule 6.2, ``re.sub(r'([^0-9])([\.,])', r'\1 \2 ', line)``, scanning only the marks . and ,.

    A mark is matched when the character before it is not a digit and was not consumed by the
    previous match; the only character an earlier match can consume there is the previous mark
    (when the two are adjacent), as that match's second character.
    """
    parts = _MARK.split(line)  # [text, mark, text, mark, ..., text]
    previous_matched = False
    for k in range(1, len(parts), 2):
        before = parts[k - 1]
        matched = before[-1] not in _DIGITS if before else (k > 1 and not previous_matched)
        if matched:
            parts[k] = f" {parts[k]} "  # '\1 \2 ': the character before stays, the mark is padded
        previous_matched = matched
    return "".join(parts)


def _split_marks_before_non_digit(line: str) -> str:
    r"""Rule 6.3, ``re.sub(r'([\.,])([^0-9])', r' \1 \2', line)``, scanning only the marks . and ,.

    A mark is matched when a non-digit follows it and it was not consumed as the second character
    of the previous match (which happens when the previous mark matched and the two are adjacent).
    """
    parts = _MARK.split(line)
    last = len(parts) - 2  # index of the last mark
    consumed = False
    for k in range(1, len(parts), 2):
        after = parts[k + 1]
        matched = not consumed and (after[0] not in _DIGITS if after else k < last)
        if matched:
            parts[k] = f" {parts[k]} "  # ' \1 \2': the mark is padded, the character after stays
        consumed = matched and not after
    return "".join(parts)


def tokenize_13a(line: str) -> list[str]:
    """mteval-v13a tokenisation (sacreBLEU's default); equals :func:`tokenize_13a_reference`."""
    line = f" {_13a_unescape(line)} "
    line = " ".join(_SYMBOL.split(line))  # 6.1 ' \1 ': the one group is every odd item
    if "." in line or "," in line:  # 6.2 and 6.3 cannot match otherwise
        line = _split_marks_before_non_digit(_split_marks_after_non_digit(line))
    if "-" in line:
        line = _pad_group(_DASH_AFTER_DIGIT, line, 2)  # 6.4 '\1 \2 ' = digit + ' - '
    return line.split()


@functools.cache
def _intl_rules() -> list[tuple[regex.Pattern, str]]:
    """mteval-v14 "international" tokenisation: Unicode classes through the `regex` module (§1.3).

    Imported and compiled on first use: `seqlab bleu` with the default 13a starts without them.
    """
    import regex

    return [
        (regex.compile(r"(\P{N})(\p{P})"), r"\1 \2 "),  # punctuation after a non-number
        (regex.compile(r"(\p{P})(\P{N})"), r" \1 \2"),  # punctuation before a non-number
        (regex.compile(r"(\p{S})"), r" \1 "),  # every symbol
    ]


def tokenize_intl(line: str) -> list[str]:
    """mteval-v14 international tokenisation (no unescaping, no padding: ``1990.`` stays one token)."""
    for pattern, replacement in _intl_rules():
        line = pattern.sub(replacement, line)
    return line.split()


def tokenize_char(line: str) -> list[str]:
    """Every non-whitespace character is a token."""
    return " ".join(line).split()


def tokenize_none(line: str) -> list[str]:
    """Whitespace split only."""
    return line.split()


TOKENIZERS: dict[str, Callable[[str], list[str]]] = {
    "13a": tokenize_13a,
    "intl": tokenize_intl,
    "char": tokenize_char,
    "none": tokenize_none,
}
