"""_derive's common case (no decision on the item) settles plain fields, equal citation
mappings and two empty evidence lists inline; it must give what the general path,
_derive_field for each field, gives."""

from __future__ import annotations

import random

from annotate.gold.pairs import (
    AGREED,
    PENDING,
    UNION,
    ItemPair,
    _derive,
    _derive_field,
    claim_fields,
)
from annotate.schema import LabelSchema

CITATION_VALUES = ({}, None, {"p1": "supports"}, {"p1": "supports", "p2": "does_not_support"})


def labels(rng: random.Random) -> dict:
    citations = rng.choice(CITATION_VALUES)
    if citations and rng.random() < 0.5:  # the same mapping, another insertion order
        citations = dict(reversed(list(citations.items())))
    support = rng.choice(("supported", "contradicted"))
    return {
        "support": support,
        "support_binary": "supported" if support == "supported" else "unsupported",
        "severity": rng.choice(("none", "minor")),
        "requires_evidence": rng.choice((True, False)),
        "citations": citations,
        "evidence_ids": rng.choice(([], [], ["p1"], ["p2", "p1"], ["p1", "p2"])),
        "evidence_quote": rng.choice(("", "a quote")),
        "note": "",
    }


def derived(a: dict, b: dict, *, general: bool) -> tuple[dict, dict]:
    pair = ItemPair(1, 2, 0, 10, 11, a, b)
    fields = claim_fields(LabelSchema())
    if general:
        for name in fields:
            _derive_field(pair, name, None)
    else:
        _derive(pair, fields, None)
    return pair.gold, pair.source


def test_the_inline_common_case_gives_what_each_field_s_derivation_gives():
    rng = random.Random(3)
    checked = set()
    for _ in range(400):
        a, b = labels(rng), labels(rng)
        fast = derived(a, b, general=False)
        assert fast == derived(a, b, general=True)
        checked.add((fast[1]["citations"], fast[1]["evidence"]))
    # every branch seen: citations agreed and pending, evidence agreed and united
    assert {c for c, _ in checked} == {AGREED, PENDING}
    assert {e for _, e in checked} == {AGREED, UNION}


def test_equal_citations_in_another_order_and_no_evidence_are_agreed():
    base = {**labels(random.Random(0)), "evidence_ids": [], "evidence_quote": ""}
    a = {**base, "citations": {"p1": "supports", "p2": "does_not_support"}, "evidence_quote": "q"}
    b = {**base, "citations": {"p2": "does_not_support", "p1": "supports"}}
    value, source = derived(a, b, general=False)
    assert source["citations"] == AGREED and value["citations"] == a["citations"]
    assert source["evidence"] == AGREED
    assert value["evidence"] == {"evidence_ids": [], "evidence_quote": "q"}
