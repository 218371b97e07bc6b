"""Sentence-level claim proposals (annotate.imports.claims): pure tests, no database."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotate.imports.claims import (
    _MARKER_WITH_SPACE_RE,
    ProposedClaim,
    marker_free,
    propose_claims,
    strip_markers,
)


def spans(answer: str) -> list[str]:
    return [answer[c.start : c.end] for c in propose_claims(answer)]


def texts(answer: str) -> list[str]:
    return [c.text for c in propose_claims(answer)]


def citations(answer: str) -> list[tuple[str, ...]]:
    return [c.citations for c in propose_claims(answer)]


def test_spec_example_splits_into_two_claims_and_the_second_cites_notes_17():
    answer = "Assignment 2 is due on 14 March. Late submissions receive no penalty [notes-17]."
    claims = propose_claims(answer)
    assert claims == [
        ProposedClaim("Assignment 2 is due on 14 March.", 0, 32, ()),
        ProposedClaim("Late submissions receive no penalty.", 33, len(answer), ("notes-17",)),
    ]
    assert answer[claims[1].start : claims[1].end] == (
        "Late submissions receive no penalty [notes-17]."
    )


def test_proposed_claim_is_frozen():
    claim = ProposedClaim("A.", 0, 2, ())
    with pytest.raises(AttributeError):
        claim.text = "B."  # type: ignore[misc]


@pytest.mark.parametrize("answer", ["", "   ", "\n\n\t \n", "- \n* \n"])
def test_empty_or_whitespace_only_answer_proposes_no_claims(answer):
    assert propose_claims(answer) == []


def test_single_sentence_without_final_punctuation_is_one_claim():
    assert spans("  The exam is open book  ") == ["The exam is open book"]


def test_decimals_do_not_end_a_sentence():
    answer = "The learning rate is 0.001 in the lab. The dropout is 0.5."
    assert spans(answer) == ["The learning rate is 0.001 in the lab.", "The dropout is 0.5."]


def test_version_numbers_do_not_end_a_sentence():
    answer = "Use v2.1 of the toolkit, not v2.0. Python 3.11.4 is required."
    assert spans(answer) == ["Use v2.1 of the toolkit, not v2.0.", "Python 3.11.4 is required."]


@pytest.mark.parametrize(
    "sentence",
    [
        "Any framework, e.g. PyTorch, is allowed.",
        "Use a framework e.g. PyTorch.",
        "The bound is tight, i.e. Theorem 3 applies.",
        "See Fig. 2 for the schema.",
        "Figs. 3 and 4 show the plan.",
        "Dr. Smith teaches the course.",
        "Compare BM25 vs. Dense retrieval.",
        "It takes approx. 3 hours.",
        "The proof is on p. 4 of the notes.",
        "Read pp. 3–5 before class.",
        "Sec. 4.2 covers normal forms.",
        "Form No. 5 is required.",
        "The notes were written by J. Smith last year.",
        "J. R. R. Tolkien wrote it.",
        "Smith et al. (2020) proposed it.",
        "Bring pens, paper, etc. to the exam.",
        "Prof. Jones and Mr. Brown agree.",
        "See Eq. (3) and Ch. IV for details.",
        "On Jan. 6 the Senate confirmed the nominee.",
        "Node.js 16 reached end of life in Sept. 2023 as planned.",
        "Office hours are Thu. 14:00–15:30 in room 4.",
        "Under s. 21(4) of the Act, the tenancy must be periodic.",
        "Sen. Lopez voted against.",
        "The team reached the summit of Mt. Everest.",
    ],
)
def test_abbreviations_do_not_end_a_sentence(sentence):
    answer = f"{sentence} The next sentence starts here."
    assert spans(answer) == [sentence, "The next sentence starts here."]


def test_etc_at_the_end_of_a_sentence_ends_it():
    answer = "Bring pens, paper, etc. Calculators are forbidden."
    assert spans(answer) == ["Bring pens, paper, etc.", "Calculators are forbidden."]


def test_numbering_abbreviation_without_a_number_ends_a_sentence_normally():
    answer = "The data is in the fig. The table is elsewhere."
    assert spans(answer) == ["The data is in the fig.", "The table is elsewhere."]


@pytest.mark.parametrize(
    "sentences",
    [
        ["The march set off at 2 p.m.", "Police were present."],
        ["The warning runs from 6 a.m. Tuesday until 9 p.m. Wednesday."],
        ["The webinar starts at 9 a.m. ET on Tuesday."],
        ["He reached the top at 8:40 a.m. Nepal time."],
        ["Services resumed at 11:15 a.m. on the same line."],
    ],
)
def test_a_m_and_p_m_end_a_sentence_unless_a_day_or_time_zone_follows(sentences):
    assert spans(" ".join(sentences)) == sentences


def test_abbreviated_month_without_a_number_after_it_ends_a_sentence_normally():
    answer = "The next meeting is on 12 Dec. Markets expect a cut."
    assert spans(answer) == ["The next meeting is on 12 Dec.", "Markets expect a cut."]


def test_a_single_capital_before_a_sentence_opener_ends_the_sentence():
    answer = "You need at least a C. The exam is hard."
    assert spans(answer) == ["You need at least a C.", "The exam is hard."]


@pytest.mark.parametrize(
    "sentence", ["Growth slows at 42 °C.", "Germany topped Group B.", "She takes vitamin D."]
)
def test_a_unit_or_a_label_letter_ends_a_sentence_unlike_an_initial(sentence):
    answer = f"{sentence} Spain finished second."
    assert spans(answer) == [sentence, "Spain finished second."]


def test_ellipsis_ends_a_sentence_only_before_a_new_sentence():
    answer = "He paused... Then he left. Wait… what happened? The list goes on…"
    assert spans(answer) == [
        "He paused...",
        "Then he left.",
        "Wait… what happened?",
        "The list goes on…",
    ]


def test_question_and_exclamation_marks_end_sentences():
    answer = "Is the exam open book? Yes! Is it due Friday?! No, Monday."
    assert spans(answer) == ["Is the exam open book?", "Yes!", "Is it due Friday?!", "No, Monday."]


def test_lowercase_after_terminal_punctuation_continues_the_sentence():
    answer = 'He asked "why?" and left. Fine.'
    assert spans(answer) == ['He asked "why?" and left.', "Fine."]


def test_a_name_written_in_lowercase_can_start_the_next_sentence():
    answer = "Apple unveiled a phone. iPhone sales rose. eBay fell. v3.1 ships soon.\nmacOS too."
    assert spans(answer) == [
        "Apple unveiled a phone.",
        "iPhone sales rose.",
        "eBay fell.",
        "v3.1 ships soon.",
        "macOS too.",
    ]
    assert spans("Any phone, e.g. iPhone 16, works.") == ["Any phone, e.g. iPhone 16, works."]


def test_quotes_and_parentheses_closing_after_the_period_stay_with_the_sentence():
    answer = 'He said "stop." Then he left. (This part is optional.) It ends ‘here.’ Done.'
    assert spans(answer) == [
        'He said "stop."',
        "Then he left.",
        "(This part is optional.)",
        "It ends ‘here.’",
        "Done.",
    ]
    assert texts(answer)[0] == 'He said "stop."'


def test_opening_quote_after_the_space_starts_the_next_sentence():
    answer = 'Stop now. "Go," he said.'
    assert spans(answer) == ["Stop now.", '"Go," he said.']


def test_markers_with_colons_and_dots_are_citations_not_sentence_ends():
    answer = "Each lab needs a sign-off [lab-note:p1]. BCNF is stricter [db-ch4:p2.3]. Done."
    claims = propose_claims(answer)
    assert [answer[c.start : c.end] for c in claims] == [
        "Each lab needs a sign-off [lab-note:p1].",
        "BCNF is stricter [db-ch4:p2.3].",
        "Done.",
    ]
    assert [c.text for c in claims] == [
        "Each lab needs a sign-off.",
        "BCNF is stricter.",
        "Done.",
    ]
    assert [c.citations for c in claims] == [("lab-note:p1",), ("db-ch4:p2.3",), ()]


def test_adjacent_and_list_markers_give_ordered_deduplicated_citations():
    answer = (
        "Groups have three members [notes-17][notes-18]. "
        "Two sign-offs are needed [a, b; c] [b] [a]. "
        "Spaces inside are fine [ x ,y ]."
    )
    assert citations(answer) == [("notes-17", "notes-18"), ("a", "b", "c"), ("x", "y")]
    assert texts(answer) == [
        "Groups have three members.",
        "Two sign-offs are needed.",
        "Spaces inside are fine.",
    ]


def test_parenthesised_marker_is_a_marker():
    answer = "Late work is penalised ([notes-17]). Next."
    claims = propose_claims(answer)
    assert claims[0].text == "Late work is penalised."
    assert claims[0].citations == ("notes-17",)
    assert answer[claims[0].start : claims[0].end] == "Late work is penalised ([notes-17])."


@pytest.mark.parametrize(
    "answer",
    [
        "Late submissions receive no penalty. [notes-17]",
        "Late submissions receive no penalty.[notes-17]",
        "Late submissions receive no penalty.\n[notes-17]",
        "Late submissions receive no penalty.\n\n[notes-17]",
    ],
)
def test_marker_after_the_final_period_belongs_to_the_sentence_before_it(answer):
    claims = propose_claims(answer)
    assert len(claims) == 1
    assert claims[0].text == "Late submissions receive no penalty."
    assert claims[0].citations == ("notes-17",)
    assert (claims[0].start, claims[0].end) == (0, len(answer))


def test_marker_after_the_period_belongs_to_the_previous_sentence_not_the_next():
    answer = "It is due Friday. [notes-1] [notes-2] Late work is penalised [notes-3]."
    assert spans(answer) == [
        "It is due Friday. [notes-1] [notes-2]",
        "Late work is penalised [notes-3].",
    ]
    assert citations(answer) == [("notes-1", "notes-2"), ("notes-3",)]


def test_marker_only_sentence_is_not_a_claim_and_its_citations_go_to_the_previous_claim():
    answer = "The exam is on 3 June.\n\n[exam-1]; [exam-2].\n\nIt lasts two hours."
    claims = propose_claims(answer)
    assert [c.text for c in claims] == ["The exam is on 3 June.", "It lasts two hours."]
    assert claims[0].citations == ("exam-1", "exam-2")
    assert (
        answer[claims[0].start : claims[0].end] == "The exam is on 3 June.\n\n[exam-1]; [exam-2]."
    )


def test_marker_only_text_before_the_first_claim_goes_to_the_first_claim():
    answer = "[intro-1]\n\nThe exam is on 3 June."
    claims = propose_claims(answer)
    assert len(claims) == 1
    assert claims[0].citations == ("intro-1",)
    assert claims[0].text == "The exam is on 3 June."
    assert (claims[0].start, claims[0].end) == (0, len(answer))


def test_marker_only_answer_proposes_no_claims():
    assert propose_claims("[notes-1] [notes-2]") == []


@pytest.mark.parametrize(
    "prose",
    [
        "[1/2 of the grade]",
        "[]",
        "[ ]",
        "[...]",
        "[see the notes]",
        "[the notes](https://example.org/notes)",
    ],
)
def test_bracketed_prose_is_not_a_marker(prose):
    answer = f"The project is worth {prose} overall."
    claims = propose_claims(answer)
    assert [c.text for c in claims] == [answer]
    assert claims[0].citations == ()


def test_newline_between_sentences_without_punctuation_separates_claims():
    answer = "The exam is open book\nCalculators are allowed\nPhones are not"
    assert spans(answer) == [
        "The exam is open book",
        "Calculators are allowed",
        "Phones are not",
    ]


def test_wrapped_lines_continue_the_sentence():
    answer = (
        "The assignment is due\non Friday and late work\nis penalised, unless\nagreed in advance.\n"
    )
    claims = propose_claims(answer)
    assert len(claims) == 1
    assert claims[0].text == (
        "The assignment is due on Friday and late work is penalised, unless agreed in advance."
    )
    assert (claims[0].start, claims[0].end) == (0, len(answer) - 1)


def test_each_bullet_line_is_a_claim_without_its_bullet_marker():
    answer = (
        "The rules are:\n"
        "- Late work is penalised [notes-17]\n"
        "* Groups have three members.\n"
        "  + Nested bullets count too\n"
        "1. Submit the form.\n"
        "2) Wait for approval [notes-18]\n"
        "(3) Collect the mark\n"
        "a) Appeal if needed\n"
        "• Unicode bullets work"
    )
    claims = propose_claims(answer)
    assert [answer[c.start : c.end] for c in claims] == [
        "The rules are:",
        "Late work is penalised [notes-17]",
        "Groups have three members.",
        "Nested bullets count too",
        "Submit the form.",
        "Wait for approval [notes-18]",
        "Collect the mark",
        "Appeal if needed",
        "Unicode bullets work",
    ]
    assert [c.citations for c in claims][1] == ("notes-17",)
    assert [c.citations for c in claims][5] == ("notes-18",)


def test_bullet_with_wrapped_continuation_is_one_claim():
    answer = "- Late work is accepted\n  within 48 hours.\n- Groups have three members."
    assert texts(answer) == [
        "Late work is accepted within 48 hours.",
        "Groups have three members.",
    ]


def test_bullet_with_two_sentences_gives_two_claims():
    answer = "- Late work is accepted. A penalty applies [notes-17].\n- Done."
    assert texts(answer) == ["Late work is accepted.", "A penalty applies.", "Done."]


def test_heading_hashes_are_not_part_of_a_claim():
    answer = "## Deadlines\nAssignment 2 is due on 14 March."
    assert spans(answer) == ["Deadlines", "Assignment 2 is due on 14 March."]


def test_horizontal_rule_is_not_a_claim():
    answer = "First point.\n\n---\n\nSecond point."
    assert spans(answer) == ["First point.", "Second point."]


def test_inline_enumeration_numbers_stay_with_their_item():
    answer = "Steps: 1. Submit the form. 2. Wait for approval."
    assert spans(answer) == ["Steps: 1. Submit the form.", "2. Wait for approval."]


@pytest.mark.parametrize(
    "sentence",
    [
        "The train left at 09:30.",
        "Arsenal beat Chelsea 3:1.",
        "The ratio stands at 1.8:1.",
        "He ran the second half in 59:47.",
        "Bayern led 2-1.",
        "Maximum marks for the project: 40.",
    ],
)
def test_a_sentence_ending_in_a_time_score_or_ratio_ends_before_the_next(sentence):
    answer = f"{sentence} Nobody was hurt."
    assert spans(answer) == [sentence, "Nobody was hurt."]


def test_text_collapses_whitespace_inside_a_sentence():
    answer = "Late   work\tis  accepted [n1] within\n48 hours."
    claims = propose_claims(answer)
    assert [c.text for c in claims] == ["Late work is accepted within 48 hours."]
    assert claims[0].citations == ("n1",)


def test_strip_markers_removes_markers_and_returns_ids_in_order():
    assert strip_markers("Late submissions receive no penalty [notes-17].") == (
        "Late submissions receive no penalty.",
        ("notes-17",),
    )
    assert strip_markers("  A [x:1] and  B [y.2; x:1][z/3]. ") == (
        "A and B.",
        ("x:1", "y.2", "z/3"),
    )
    assert strip_markers("word[a]word") == ("word word", ("a",))
    assert strip_markers("[a] Leading marker.") == ("Leading marker.", ("a",))
    assert strip_markers("Worth [1/2 of the grade] and []") == (
        "Worth [1/2 of the grade] and []",
        (),
    )
    assert strip_markers("") == ("", ())


MARKER_TEXT = st.text(alphabet=list("ab1 \t\n[](),;:-./_x\"'“é"), max_size=40)


@settings(max_examples=400, deadline=None)
@given(MARKER_TEXT)
def test_marker_free_is_strip_markers_text_and_needs_a_bracket(text):
    """The import compares claims with `marker_free`; it must be strip_markers' text. Its
    shortcut (no bracket, no marker) must never miss one."""
    assert marker_free(text) == strip_markers(text)[0]
    if "[" not in text:
        assert _MARKER_WITH_SPACE_RE.search(text) is None


def test_strip_markers_of_each_proposed_span_gives_the_claim_text_and_citations():
    answer = (
        "Assignment 2 is due on 14 March [notes-1]. Late work is penalised. [notes-2][notes-3]\n"
        "- Groups have three members [lab-note:p1; lab-note:p2]\n"
        'He said "stop." [db-ch4:p2.3] See Fig. 2 on p. 4 [notes-9].'
    )
    claims = propose_claims(answer)
    assert len(claims) == 5
    for claim in claims:
        assert strip_markers(answer[claim.start : claim.end]) == (claim.text, claim.citations)


# --- property-style: random compositions of sentences with known boundaries --------------------

# (sentence as written, its claim text, its citations). Each starts a sentence unambiguously
# and ends one unambiguously, so any composition has known boundaries.
POOL: list[tuple[str, str, tuple[str, ...]]] = [
    ("Assignment 2 is due on 14 March.", "Assignment 2 is due on 14 March.", ()),
    (
        "Late submissions receive no penalty [notes-17].",
        "Late submissions receive no penalty.",
        ("notes-17",),
    ),
    ("The learning rate is 0.001 in the lab.", "The learning rate is 0.001 in the lab.", ()),
    ("Use v2.1 of the toolkit, not v2.0!", "Use v2.1 of the toolkit, not v2.0!", ()),
    ("Any framework, e.g. PyTorch, is allowed.", "Any framework, e.g. PyTorch, is allowed.", ()),
    (
        "The bound is tight, i.e. Theorem 3 applies.",
        "The bound is tight, i.e. Theorem 3 applies.",
        (),
    ),
    ("Bring pens, paper, etc.", "Bring pens, paper, etc.", ()),
    (
        "See Fig. 2 for the schema [db-ch4:p2.3].",
        "See Fig. 2 for the schema.",
        ("db-ch4:p2.3",),
    ),
    ("Dr. Smith teaches the course.", "Dr. Smith teaches the course.", ()),
    ("Compare BM25 vs. dense retrieval.", "Compare BM25 vs. dense retrieval.", ()),
    ("It takes approx. 3 hours.", "It takes approx. 3 hours.", ()),
    (
        "The proof is on p. 4 of the notes [lab-note:p1].",
        "The proof is on p. 4 of the notes.",
        ("lab-note:p1",),
    ),
    ("Read pp. 3–5 before class.", "Read pp. 3–5 before class.", ()),
    ("Sec. 4.2 covers normal forms.", "Sec. 4.2 covers normal forms.", ()),
    ("Form No. 5 is required.", "Form No. 5 is required.", ()),
    (
        "The notes were written by J. Smith in 2021.",
        "The notes were written by J. Smith in 2021.",
        (),
    ),
    ("Is the exam open book?", "Is the exam open book?", ()),
    ("Yes!", "Yes!", ()),
    ('He said "stop."', 'He said "stop."', ()),
    ("Wait... what happened?", "Wait... what happened?", ()),
    ("The list goes on…", "The list goes on…", ()),
    ("(This part is optional.)", "(This part is optional.)", ()),
    ('"Quoted openings are fine," she said.', '"Quoted openings are fine," she said.', ()),
    ("3 students missed the deadline.", "3 students missed the deadline.", ()),
    (
        "Each lab needs two sign-offs [lab-note:p1][lab-note:p2].",
        "Each lab needs two sign-offs.",
        ("lab-note:p1", "lab-note:p2"),
    ),
    (
        "Groups may have three members [notes-3, notes-4; notes-3].",
        "Groups may have three members.",
        ("notes-3", "notes-4"),
    ),
    (
        "It is worth [1/2 of the grade] overall.",
        "It is worth [1/2 of the grade] overall.",
        (),
    ),
    ("Smith et al. (2020) proposed it.", "Smith et al. (2020) proposed it.", ()),
    ("Is it due Friday?!", "Is it due Friday?!", ()),
]
TRAILING_MARKERS = ["[notes-17]", "[lab-note:p1]", "[db-ch4:p2.3]", "[x-1][x-2]", "[a; b]"]
SEPARATORS = [" ", "  ", "\n", " \n ", "\n\n", "\t", "\n\n\n  "]
BULLETS = ["- ", "* ", "1. ", "12) ", "• "]


def _compose(rng: random.Random) -> tuple[str, list[tuple[str, str, tuple[str, ...]]]]:
    """Return an answer and its expected (span text, claim text, citations) in order."""
    bulleted = rng.random() < 0.3
    parts: list[str] = [rng.choice(["", " ", "\n", "  \n"])]
    expected = []
    for index in range(rng.randint(1, 7)):
        written, text, cited = rng.choice(POOL)
        if rng.random() < 0.3:
            marker = rng.choice(TRAILING_MARKERS)
            written = f"{written}{rng.choice(['', ' ', '  '])}{marker}"
            cited = tuple(dict.fromkeys(cited + strip_markers(marker)[1]))
        if bulleted:
            parts.append(("\n" if index else "") + rng.choice(BULLETS))
        elif index:
            parts.append(rng.choice(SEPARATORS))
        parts.append(written)
        expected.append((written, text, cited))
    parts.append(rng.choice(["", " ", "\n", "\n\n"]))
    return "".join(parts), expected


@pytest.mark.parametrize("seed", range(10))
def test_random_compositions_recover_exactly_the_known_sentences(seed):
    rng = random.Random(1000 + seed)
    for _ in range(40):
        answer, expected = _compose(rng)
        claims = propose_claims(answer)
        found = [(answer[c.start : c.end], c.text, c.citations) for c in claims]
        assert found == expected, answer
        previous_end = 0
        for claim in claims:
            assert 0 <= previous_end <= claim.start < claim.end <= len(answer), answer
            assert answer[claim.start : claim.end] == answer[claim.start : claim.end].strip()
            previous_end = claim.end
