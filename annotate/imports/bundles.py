"""Parse and validate a bundle (JSONL) into plain records. No ORM here.

The parser streams the file line by line, keeps compact records, and collects *every* problem
as `line N: message` instead of stopping at the first one: a lead fixing a 10,000-line file
wants the whole list at once. References (case ids, passage ids) may point forward in the
file, so they are checked after the last line, against the bundle plus whatever the project
already holds (passed in by the caller).

The records it returns are in annotate.imports.records; reading lines and reporting their
problems (JsonLines, BundleError, BundleInvalid) is annotate.imports.lines, shared by every
importer. About 700 lines on purpose: one format's parser (its limits and fields, typed field
access, each line type, the cross-line checks), whose parts share private helpers.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from annotate.imports.claims import marker_free
from annotate.imports.lines import BundleError, BundleInvalid, JsonLines, kind_of, too_long
from annotate.imports.records import (
    SPLITS,
    AnswerRecord,
    Bundle,
    CaseRecord,
    ClaimRecord,
    EvidenceRecord,
    JudgmentRecord,
    PassageRecord,
    RetrievedRecord,
    VariantRecord,
    normalize_ws,
    quote_occurs,
)
from annotate.schema import LabelSchema, SchemaInvalid

# Limits (docs/bundle-format.md, "Limits"). Ids, names and labels are held by columns of a
# fixed width; longer texts by columns without one, bounded at sizes no real item reaches so
# that one line cannot fill a page or a database. Counts of list items are bounded for the same
# reason, and where a list's position is stored in a small integer column.
MAX_ID = 255  # passage_id, case_id, answer_id; the passage ids an item names or cites
MAX_NAME = 200  # a variant's name, the bundle's name and corpus_version
MAX_LABEL = 255  # document, location, title, model; tags, checked documents
MAX_TEXT = 200_000  # a passage's or an answer's text, a case's reference answer
MAX_SHORT_TEXT = 20_000  # a question, a fact, a forbidden claim, a quote, a description
MAX_ITEMS = 10_000  # items of a list: retrieved passages, claims, facts, tags ...
MAX_EVIDENCE = 1_000  # evidence entries of a case
MAX_CITATIONS = 1_000  # passages one claim cites
MAX_INT32 = 2**31 - 1  # `sample` and `rank` (integer columns)
# Retrieval metrics use the exponential gain 2^grade - 1; real scales are 0-3 or 0-4.
MAX_GRADE = 100
MAX_ELAPSED_MS = 1e12  # about 31 years
MAX_REQUEST_COST = 1e9

FIELDS: dict[str, tuple[set[str], set[str]]] = {
    # type: (required fields, optional fields)
    "bundle": ({"corpus_version"}, {"name", "label_schema"}),
    "passage": ({"passage_id", "text"}, {"document", "location", "title"}),
    "case": (
        {"case_id", "question", "answerable", "adversarial"},
        {
            "required_facts",
            "reference",
            "forbidden_claims",
            "evidence",
            "split",
            "checked_documents",
            "tags",
            "corpus_version",
        },
    ),
    "answer": (
        {"answer_id", "case_id", "variant", "text"},
        {"sample", "abstained", "elapsed_ms", "request_cost", "retrieved", "claims"},
    ),
    "judgment": ({"case_id", "passage_id", "grade"}, set()),
    "variant": ({"name"}, {"description", "model", "settings"}),
}


class _Line:
    """Typed field access for one JSON object; every problem is appended to `errors`."""

    def __init__(self, number: int, obj: dict[str, Any], errors: list[BundleError], where=""):
        self.lineno, self.obj, self.errors, self.where = number, obj, errors, where

    def error(self, message: str) -> None:
        self.errors.append(BundleError(self.lineno, f"{self.where}{message}"))

    def _get(self, key: str, required: bool, default: Any) -> tuple[bool, Any]:
        if key not in self.obj or (self.obj[key] is None and not required):
            if required:
                self.error(f"missing required field '{key}'")
            return False, default
        return True, self.obj[key]

    def string(
        self, key: str, *, max_length: int, required: bool = False, nonempty: bool = False
    ) -> str:
        present, value = self._get(key, required, "")
        if not present:
            return ""
        if not isinstance(value, str):
            self.error(f"'{key}' must be a string, got {kind_of(value)}")
            return ""
        if (required or nonempty) and not value.strip():
            self.error(f"'{key}' must not be empty")
        if len(value) > max_length:
            self.error(too_long(key, value, max_length))
            return ""
        return value

    def boolean(self, key: str, *, required: bool = False, default: bool = False) -> bool:
        present, value = self._get(key, required, default)
        if present and not isinstance(value, bool):
            self.error(f"'{key}' must be true or false, got {kind_of(value)}")
            return default
        return value

    def integer(
        self,
        key: str,
        *,
        maximum: int,
        required: bool = False,
        default: int = 0,
        minimum: int | None = None,
    ) -> int:
        present, value = self._get(key, required, default)
        if not present:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            self.error(f"'{key}' must be an integer, got {kind_of(value)}")
            return default
        if minimum is not None and value < minimum:
            self.error(f"'{key}' must be ≥ {minimum}, got {value}")
        elif value > maximum:
            self.error(f"'{key}' must be at most {maximum:,}, got {value:,}")
        return value

    def number(
        self, key: str, *, minimum: float | None = None, maximum: float | None = None
    ) -> float | None:
        """A finite number (JsonLines refused NaN, Infinity and overflow already)."""
        present, value = self._get(key, False, None)
        if not present:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.error(f"'{key}' must be a number, got {kind_of(value)}")
            return None
        if minimum is not None and value < minimum:
            self.error(f"'{key}' must be ≥ {minimum}, got {value}")
        elif maximum is not None and value > maximum:
            self.error(f"'{key}' must be at most {_figure(maximum)}, got {_figure(value)}")
        return value

    def string_list(
        self,
        key: str,
        *,
        max_length: int,
        max_items: int = MAX_ITEMS,
        required: bool = False,
        min_items: int = 0,
    ) -> list[str]:
        present, value = self._get(key, required, [])
        if not present:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.error(f"'{key}' must be a list of strings")
            return []
        if len(value) < min_items:
            self.error(f"'{key}' needs at least {min_items} item(s)")
        if len(value) > max_items:
            self.error(f"'{key}' has {len(value):,} items; at most {max_items:,} are allowed")
            return []
        for i, item in enumerate(value):
            if len(item) > max_length:
                self.error(too_long(f"{key}[{i}]", item, max_length))
                return []
        return value

    def object_list(self, key: str, *, max_items: int = MAX_ITEMS) -> list[dict[str, Any]]:
        present, value = self._get(key, False, [])
        if not present:
            return []
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            self.error(f"'{key}' must be a list of objects")
            return []
        if len(value) > max_items:
            self.error(f"'{key}' has {len(value):,} items; at most {max_items:,} are allowed")
            return []
        return value

    def check_fields(self, kind: str) -> None:
        required, optional = FIELDS[kind]
        unknown = set(self.obj) - required - optional - {"type"}
        for key in sorted(unknown):
            allowed = ", ".join(sorted(required | optional))
            self.error(
                f"unknown field '{key}' in {kind}{_belongs(kind, key, self.obj)} "
                f"(allowed: {allowed})"
            )


def _belongs(kind: str, key: str, obj: Mapping[str, Any]) -> str:
    """Where a field that is unknown on this line does belong, when another line type has it:
    a generator's `model` on an answer line is the usual case (it describes the variant)."""
    homes = [k for k, (req, opt) in FIELDS.items() if k != kind and key in req | opt]
    if not homes:
        return ""
    if kind == "answer" and "variant" in homes and isinstance(obj.get("variant"), str):
        example = json.dumps(
            {"type": "variant", "name": obj["variant"], key: obj[key]}, ensure_ascii=False
        )
        return f": '{key}' belongs on a variant line, e.g. {_short(example, 120, keep_ws=True)}"
    return f": '{key}' belongs on a {' or '.join(homes)} line"


def _figure(value: float) -> str:
    """A figure as a lead would write it: 1,000,000,000, or 1000000000.5, or 1e+300."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        value = int(value)
    return f"{value:,}" if isinstance(value, int) else repr(value)


def parse_bundle(
    lines: Iterable[bytes | str],
    *,
    corpus_version: str | None = None,
    known_passages: Mapping[str, str] | None = None,
    known_cases: Iterable[str] = (),
    progress: Callable[[int], None] | None = None,
) -> Bundle:
    """Parse and validate a bundle. Raises BundleInvalid with every problem found.

    corpus_version: the project's, when it exists; the bundle must match it.
    known_passages: passage_id -> text of passages the project already holds.
    known_cases: case ids the project already holds.
    """
    known_passages = known_passages or {}
    known_cases = set(known_cases)
    errors: list[BundleError] = []
    bundle = Bundle()
    case_versions: list[tuple[int, str]] = []
    seen_content = False
    version_refused = False  # the header has one, refused: not also "no corpus_version"
    reader = JsonLines(lines, errors, progress=progress)
    for number, obj in reader:
        kind = obj.get("type")
        if not isinstance(kind, str) or kind not in FIELDS:
            known = ", ".join(sorted(FIELDS))
            if kind is None:
                got = "no 'type'"
            elif isinstance(kind, str):
                got = f"type {_short(kind, 40)}"
            else:
                got = f"'type' is {kind_of(kind)}"
            errors.append(BundleError(number, f"{got}: each line needs a type, one of {known}"))
            continue
        line = _Line(number, obj, errors)
        line.check_fields(kind)
        if kind == "bundle":
            if seen_content or bundle.corpus_version is not None:
                line.error("the bundle header must be the first line")
            bundle.corpus_version = (
                line.string("corpus_version", required=True, max_length=MAX_NAME) or None
            )
            version_refused = bundle.corpus_version is None and "corpus_version" in obj
            bundle.name = line.string("name", max_length=MAX_NAME) or None
            if _schema_shape_ok(line):
                try:
                    bundle.label_schema = LabelSchema.parse(line.obj["label_schema"])
                except SchemaInvalid as exc:
                    for problem in exc.problems:
                        line.error(problem)
            continue
        seen_content = True
        if kind == "passage":
            _parse_passage(line, bundle)
        elif kind == "variant":
            _parse_variant(line, bundle)
        elif kind == "case":
            version = _parse_case(line, bundle)
            if version:
                case_versions.append((number, version))
        elif kind == "answer":
            _parse_answer(line, bundle)
        elif kind == "judgment":
            _parse_judgment(line, bundle)
    bundle.lines = reader.count
    if progress:
        progress(reader.count)

    _check_versions(bundle, corpus_version, case_versions, errors, refused=version_refused)
    _check_references(bundle, known_passages, known_cases, errors)
    if errors:
        raise BundleInvalid(errors)
    return bundle


def _schema_shape_ok(line: _Line) -> bool:
    """Whether the header's label_schema can be handed to LabelSchema.parse, which reports
    every problem of a schema but looks `support` up by value: a list or an object there
    cannot be looked up at all."""
    value = line.obj.get("label_schema")
    if value is None:
        return False
    if isinstance(value, dict) and not isinstance(value.get("support", ""), str):
        line.error(
            "label_schema 'support' must be a string such as 'three_way' or 'binary', got "
            f"{kind_of(value['support'])}"
        )
        return False
    return True


def _parse_passage(line: _Line, bundle: Bundle) -> None:
    record = PassageRecord(
        line=line.lineno,
        passage_id=line.string("passage_id", required=True, max_length=MAX_ID),
        text=line.string("text", required=True, max_length=MAX_TEXT),
        document=line.string("document", max_length=MAX_LABEL),
        location=line.string("location", max_length=MAX_LABEL),
        title=line.string("title", max_length=MAX_LABEL),
    )
    if record.passage_id in bundle.passages:
        first = bundle.passages[record.passage_id].line
        line.error(f"duplicate passage_id '{record.passage_id}' (first on line {first})")
    elif record.passage_id:
        bundle.passages[record.passage_id] = record


def _parse_variant(line: _Line, bundle: Bundle) -> None:
    settings = line.obj.get("settings") or {}
    if not isinstance(settings, dict):
        line.error("'settings' must be an object")
        settings = {}
    record = VariantRecord(
        line=line.lineno,
        name=line.string("name", required=True, max_length=MAX_NAME),
        description=line.string("description", max_length=MAX_SHORT_TEXT),
        model=line.string("model", max_length=MAX_LABEL),
        settings=settings,
    )
    if record.name in bundle.variants:
        first = bundle.variants[record.name].line
        line.error(f"duplicate variant '{record.name}' (first on line {first})")
    elif record.name:
        bundle.variants[record.name] = record


def _parse_case(line: _Line, bundle: Bundle) -> str:
    record = CaseRecord(
        line=line.lineno,
        case_id=line.string("case_id", required=True, max_length=MAX_ID),
        question=line.string("question", required=True, max_length=MAX_SHORT_TEXT),
        answerable=line.boolean("answerable", required=True),
        adversarial=line.boolean("adversarial", required=True),
        required_facts=line.string_list("required_facts", max_length=MAX_SHORT_TEXT),
        reference=line.string("reference", max_length=MAX_TEXT),
        forbidden_claims=line.string_list("forbidden_claims", max_length=MAX_SHORT_TEXT),
        split=line.string("split", max_length=MAX_LABEL) or "dev",
        checked_documents=line.string_list("checked_documents", max_length=MAX_LABEL),
        tags=line.string_list("tags", max_length=MAX_LABEL),
    )
    if record.split not in SPLITS:
        line.error(f"'split' must be one of {', '.join(SPLITS)}, got {record.split!r}")
    for i, item in enumerate(line.object_list("evidence", max_items=MAX_EVIDENCE)):
        sub = _item(line, "evidence", i, item)
        _unknown_fields(sub, _EVIDENCE_KEYS)
        record.evidence.append(
            EvidenceRecord(
                passage_id=sub.string("passage_id", required=True, max_length=MAX_ID),
                quote=sub.string("quote", required=True, max_length=MAX_SHORT_TEXT),
                location=sub.string("location", max_length=MAX_LABEL),
            )
        )
    if record.case_id in bundle.cases:
        first = bundle.cases[record.case_id].line
        line.error(f"duplicate case_id '{record.case_id}' (first on line {first})")
    elif record.case_id:
        bundle.cases[record.case_id] = record
    return line.string("corpus_version", max_length=MAX_NAME)


def _parse_answer(line: _Line, bundle: Bundle) -> None:
    text = line.string("text", required=True, max_length=MAX_TEXT)
    record = AnswerRecord(
        line=line.lineno,
        answer_id=line.string("answer_id", required=True, max_length=MAX_ID),
        case_id=line.string("case_id", required=True, max_length=MAX_ID),
        variant=line.string("variant", required=True, max_length=MAX_NAME),
        text=text,
        sample=line.integer("sample", minimum=0, maximum=MAX_INT32),
        abstained=line.boolean("abstained"),
        elapsed_ms=line.number("elapsed_ms", minimum=0, maximum=MAX_ELAPSED_MS),
        request_cost=line.number("request_cost", minimum=0, maximum=MAX_REQUEST_COST),
    )
    ranks: set[int] = set()
    retrieved_ids: set[str] = set()
    for i, item in enumerate(line.object_list("retrieved")):
        entry = _plain_retrieved(item) or _checked_retrieved(_item(line, "retrieved", i, item))
        if entry.rank in ranks:
            _item(line, "retrieved", i, item).error(
                f"rank {entry.rank} appears twice in this answer's ranking"
            )
        if entry.passage_id in retrieved_ids:
            _item(line, "retrieved", i, item).error(
                f"passage '{entry.passage_id}' appears twice in this answer's ranking"
            )
        ranks.add(entry.rank)
        retrieved_ids.add(entry.passage_id)
        record.retrieved.append(entry)
    record.retrieved.sort(key=lambda r: r.rank)
    if "claims" in line.obj and line.obj["claims"] is not None:
        # Spans of a text refused for its length would only be refused again, misleadingly.
        raw_text = line.obj.get("text")
        too_long_text = isinstance(raw_text, str) and len(raw_text) > MAX_TEXT
        record.claims = [] if too_long_text else _parse_claims(line, text)
    if record.answer_id in bundle.answers:
        first = bundle.answers[record.answer_id].line
        line.error(f"duplicate answer_id '{record.answer_id}' (first on line {first})")
    elif record.answer_id:
        bundle.answers[record.answer_id] = record


def _parse_claims(line: _Line, text: str) -> list[ClaimRecord]:
    claims: list[ClaimRecord] = []
    previous_end = 0
    for i, item in enumerate(line.object_list("claims")):  # spans bound them by the text
        claim = _plain_claim(item) or _checked_claim(_item(line, "claims", i, item))
        problem = _span_problem(claim, text, previous_end)
        if problem:
            _item(line, "claims", i, item).error(problem)
        previous_end = max(previous_end, claim.end)
        claims.append(claim)
    return claims


def _item(line: _Line, key: str, i: int, item: dict[str, Any]) -> _Line:
    """A list item's own _Line: its errors name the item (`claims[3]: ...`)."""
    return _Line(line.lineno, item, line.errors, where=f"{key}[{i}]: ")


def _span_problem(claim: ClaimRecord, text: str, previous_end: int) -> str | None:
    if claim.end <= claim.start:
        return f"span [{claim.start}, {claim.end}) is empty or reversed"
    if claim.end > len(text):
        return (
            f"span [{claim.start}, {claim.end}) lies outside the answer text "
            f"({len(text)} characters)"
        )
    if claim.start < previous_end:
        return (
            f"span [{claim.start}, {claim.end}) overlaps or precedes the previous claim "
            f"(which ends at {previous_end}); claims must be in order and not overlap"
        )
    if claim.text and not claim_text_matches(claim.text, text[claim.start : claim.end]):
        return _span_mismatch(claim, text)
    return None


# Claims and retrieved passages are most of a bundle's items (ten of each an answer in the
# benchmark's): checking each through _Line's typed getters took a quarter of parsing. An item
# that plainly passes every check is read directly; any other goes the checked way, which
# finds and words its problems. `_plain_*` accepts only what the checked way accepts unchanged
# (tests/annotate/test_fuzz_imports.py holds them to that).
_CLAIM_KEYS = frozenset({"text", "start", "end", "citations"})
_EVIDENCE_KEYS = frozenset({"passage_id", "quote", "location"})
_RETRIEVED_KEYS = frozenset({"passage_id", "rank", "score", "in_prompt"})


def _plain_string(value: Any, max_length: int) -> bool:
    """Whether _Line.string(required=True, max_length=...) takes `value` without a word."""
    return type(value) is str and len(value) <= max_length and bool(value.strip())


def _plain_integer(value: Any, minimum: int, maximum: int) -> bool:
    """Likewise for _Line.integer (a JSON true is a bool, not an integer)."""
    return type(value) is int and minimum <= value <= maximum


def _plain_claim(item: dict[str, Any]) -> ClaimRecord | None:
    """The claim `item` holds when it is plainly valid, else None."""
    text, start, end = item.get("text"), item.get("start"), item.get("end")
    if not (
        item.keys() <= _CLAIM_KEYS
        and _plain_string(text, MAX_TEXT)
        and _plain_integer(start, 0, MAX_TEXT)
        and _plain_integer(end, 0, MAX_TEXT)
    ):
        return None
    citations = item.get("citations")
    if citations is None:
        return ClaimRecord(text, start, end, ())
    if not (
        type(citations) is list
        and len(citations) <= MAX_CITATIONS
        and all(type(c) is str and len(c) <= MAX_ID for c in citations)
    ):
        return None
    return ClaimRecord(text, start, end, tuple(dict.fromkeys(citations)))


def _unknown_fields(sub: _Line, allowed: frozenset[str]) -> None:
    for key in sorted(set(sub.obj) - allowed):
        sub.error(f"unknown field '{key}' (allowed: {', '.join(sorted(allowed))})")


def _checked_claim(sub: _Line) -> ClaimRecord:
    _unknown_fields(sub, _CLAIM_KEYS)
    return ClaimRecord(
        text=sub.string("text", required=True, max_length=MAX_TEXT),
        start=sub.integer("start", required=True, minimum=0, maximum=MAX_TEXT),
        end=sub.integer("end", required=True, minimum=0, maximum=MAX_TEXT),
        citations=tuple(
            dict.fromkeys(sub.string_list("citations", max_length=MAX_ID, max_items=MAX_CITATIONS))
        ),
    )


def _plain_retrieved(item: dict[str, Any]) -> RetrievedRecord | None:
    """The retrieved passage `item` holds when it is plainly valid, else None."""
    passage_id, rank = item.get("passage_id"), item.get("rank")
    score, in_prompt = item.get("score"), item.get("in_prompt")
    if (
        item.keys() <= _RETRIEVED_KEYS
        and _plain_string(passage_id, MAX_ID)
        and _plain_integer(rank, 1, MAX_INT32)
        and (score is None or type(score) is float or type(score) is int)
        and (in_prompt is None or type(in_prompt) is bool)
    ):
        return RetrievedRecord(passage_id, rank, score, bool(in_prompt))
    return None


def _checked_retrieved(sub: _Line) -> RetrievedRecord:
    _unknown_fields(sub, _RETRIEVED_KEYS)
    return RetrievedRecord(
        passage_id=sub.string("passage_id", required=True, max_length=MAX_ID),
        rank=sub.integer("rank", required=True, minimum=1, maximum=MAX_INT32),
        score=sub.number("score"),
        in_prompt=sub.boolean("in_prompt"),
    )


def claim_text_matches(claim_text: str, span: str) -> bool:
    """A claim's `text` must be the answer's characters [start, end). Also accepted: the same
    characters with citation markers removed and whitespace collapsed, the form claimdesk's
    splitter proposes and its bundle export writes (`... no penalty [notes-17].` as
    `... no penalty.`), so exported bundles re-import. An off-by-one span fails either way."""
    if claim_text == span:
        return True
    wanted = normalize_ws(claim_text)
    return wanted == normalize_ws(span) or wanted == marker_free(span)


def _span_mismatch(claim: ClaimRecord, text: str) -> str:
    """Both strings, and where the text does occur when it is near: an off-by-one export is
    the usual cause, and saying so saves the lead a search."""
    span = text[claim.start : claim.end]
    message = (
        f"'text' {_short(claim.text, 80, keep_ws=True)} differs from the answer's characters "
        f"[{claim.start}, {claim.end}), which are {_short(span, 80, keep_ws=True)}"
    )
    found = text.find(claim.text, max(0, claim.start - 64))
    if found != -1 and abs(found - claim.start) <= 64:
        message += (
            f"; the text occurs at [{found}, {found + len(claim.text)}) "
            "(offsets count Unicode code points, as Python indexes a str)"
        )
    return message


def _parse_judgment(line: _Line, bundle: Bundle) -> None:
    record = JudgmentRecord(
        line=line.lineno,
        case_id=line.string("case_id", required=True, max_length=MAX_ID),
        passage_id=line.string("passage_id", required=True, max_length=MAX_ID),
        grade=line.integer("grade", required=True, minimum=0, maximum=MAX_GRADE),
    )
    key = (record.case_id, record.passage_id)
    if key in bundle.judgments:
        first = bundle.judgments[key].line
        line.error(
            f"duplicate judgment for case '{record.case_id}' and passage "
            f"'{record.passage_id}' (first on line {first})"
        )
    else:
        bundle.judgments[key] = record


def _check_versions(
    bundle: Bundle,
    project_version: str | None,
    case_versions: list[tuple[int, str]],
    errors: list[BundleError],
    *,
    refused: bool = False,
) -> None:
    if project_version and bundle.corpus_version and bundle.corpus_version != project_version:
        errors.append(
            BundleError(
                1,
                f"corpus_version '{bundle.corpus_version}' does not match the project's "
                f"'{project_version}'",
            )
        )
    expected = project_version or bundle.corpus_version
    if expected is None and case_versions:
        expected = case_versions[0][1]
        bundle.corpus_version = expected
    for number, version in case_versions:
        if version != expected:
            errors.append(
                BundleError(
                    number,
                    f"case corpus_version '{version}' does not match the "
                    f"{'project' if project_version else 'bundle'}'s '{expected}'",
                )
            )
    if expected is None and not refused:
        errors.append(
            BundleError(
                1,
                "no corpus_version: start the file with "
                '{"type": "bundle", "corpus_version": "...", "name": "..."}',
            )
        )


def _check_references(
    bundle: Bundle,
    known_passages: Mapping[str, str],
    known_cases: set[str],
    errors: list[BundleError],
) -> None:
    def passage_text(passage_id: str) -> str | None:
        record = bundle.passages.get(passage_id)
        return record.text if record else known_passages.get(passage_id)

    case_ids = known_cases | bundle.cases.keys()
    for case in bundle.cases.values():
        for i, evidence in enumerate(case.evidence):
            if not evidence.passage_id:
                continue
            text = passage_text(evidence.passage_id)
            if text is None:
                errors.append(
                    BundleError(
                        case.line, f"evidence[{i}]: unknown passage_id '{evidence.passage_id}'"
                    )
                )
            elif evidence.quote and text and not quote_occurs(evidence.quote, text):
                errors.append(
                    BundleError(
                        case.line,
                        f"evidence[{i}]: quote {_short(evidence.quote)} does not occur in "
                        f"passage '{evidence.passage_id}'",
                    )
                )
    samples: dict[tuple[str, str, int], int] = {}
    for answer in bundle.answers.values():
        if answer.case_id and answer.case_id not in case_ids:
            errors.append(BundleError(answer.line, f"unknown case_id '{answer.case_id}'"))
        for i, entry in enumerate(answer.retrieved):
            if entry.passage_id and passage_text(entry.passage_id) is None:
                errors.append(
                    BundleError(
                        answer.line, f"retrieved[{i}]: unknown passage_id '{entry.passage_id}'"
                    )
                )
        key = (answer.case_id, answer.variant, answer.sample)
        if key in samples:
            errors.append(
                BundleError(
                    answer.line,
                    f"case '{answer.case_id}', variant '{answer.variant}', sample "
                    f"{answer.sample} already answered on line {samples[key]}",
                )
            )
        samples.setdefault(key, answer.line)
    for judgment in bundle.judgments.values():
        if judgment.case_id and judgment.case_id not in case_ids:
            errors.append(BundleError(judgment.line, f"unknown case_id '{judgment.case_id}'"))
        if judgment.passage_id and passage_text(judgment.passage_id) is None:
            errors.append(BundleError(judgment.line, f"unknown passage_id '{judgment.passage_id}'"))


def _short(text: str, limit: int = 60, *, keep_ws: bool = False) -> str:
    text = text if keep_ws else normalize_ws(text)
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")
