import html
import re

from django import template
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import mark_safe

from annotate.imports import uploads
from annotate.models import failure_label_words

register = template.Library()


@register.filter
def get_item(mapping, key):
    """mapping[key] in a template, or None (for dicts keyed by strings with dots or colons)."""
    if not mapping:
        return None
    return mapping.get(key)


@register.filter
def p_value(value) -> str:
    """'p = 0.031', 'p = 7e-05': a p-value with the digits it has, never 'p = 0.000' for one
    that is merely small; one that underflowed to 0 is 'p < 1e-300'."""
    p = float(value)
    if p <= 0.0:
        return "p < 1e-300"
    return f"p = {p:.3f}" if p >= 0.01 else f"p = {p:.2g}"


@register.filter
def percent(value) -> str:
    """A probability as a percentage with one decimal: '4.9%'; None (undefined) as '—'."""
    if value is None:
        return "—"
    return f"{100 * float(value):.1f}%"


@register.filter
def failure_words(label) -> str:
    """missing_evidence → Missing evidence (annotate.models.failure_label_words)."""
    return failure_label_words(label)


@register.filter
def duration(seconds) -> str:
    """'45 s', '3 min 05 s', '1 h 02 min': time spent, in words a person reads at a glance."""
    seconds = int(seconds or 0)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


@register.simple_tag
def max_upload_bytes() -> int:
    """For data-max-bytes on an upload form: static/upload.js refuses a larger file before
    sending it."""
    return uploads.max_upload_bytes()


@register.simple_tag
def field_error(errors, *parts, oob=False):
    """The error slot of one field, e.g. {% field_error errors "claim" 0 "evidence_quote" %}.
    It is always rendered (hidden when empty) so htmx can swap a new message into it."""
    key = ".".join(str(p) for p in parts)
    message = (errors or {}).get(key, "")
    slot_id = "err-" + key.replace(".", "-").replace("_", "-")
    oob_attr = ' hx-swap-oob="true"' if oob else ""
    hidden = "" if message else " hidden"
    # Plain string building: this tag runs five times per claim on the labelling page.
    return mark_safe(
        f'<p class="field-error" id="{_escape(slot_id)}" role="alert"{oob_attr}{hidden}>'
        f"{_escape(message)}</p>"
    )


@register.simple_tag
def field_note(row, name: str):
    """The editor's slot for one field of the selected claim: what is wrong with it
    (class error) or what a submission still needs (class needed), hidden when neither.
    static/labelling.js fills the same slots when another claim is selected."""
    message = (row.problems.get(name) or "") if row else ""
    kind = "error" if message else "needed"
    if not message and row:
        message = row.missing.get(name) or ""
    hidden = "" if message else " hidden"
    return mark_safe(
        f'<p class="field-note {kind}" id="note-{_escape(name)}" data-field="{_escape(name)}"'
        f"{hidden}>{_escape(message)}</p>"
    )


@register.filter
def ordinal(value) -> str:
    """1 -> 1st, 2 -> 2nd, 11 -> 11th, 23 -> 23rd."""
    n = int(value)
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _escape(value) -> str:
    """Django's escape() without its lazy-string wrapper, which costs more than the escaping
    in tags that run hundreds of times per page. Same output: both are html.escape(str(x))."""
    return html.escape(str(value))


def find_quote(text: str, quote: str) -> tuple[int, int] | None:
    """Where a quote occurs in a passage, whitespace-normalised, or None."""
    words = quote.split()
    if not words:
        return None
    match = re.search(r"\s+".join(re.escape(w) for w in words), text)
    return (match.start(), match.end()) if match else None


@register.simple_tag
def highlight(text: str, quotes):
    """The passage text, escaped, with each (quote, css class) pair marked where it occurs.
    Overlapping quotes are marked with both classes over the shared part."""
    marks: list[tuple[int, int, str]] = []
    for quote, css in quotes:
        span = find_quote(text, quote or "")
        if span:
            marks.append((*span, css))
    if not marks:
        return text
    cuts = sorted({0, len(text), *(m[0] for m in marks), *(m[1] for m in marks)})
    pieces = []
    for start, end in zip(cuts, cuts[1:], strict=False):
        classes = " ".join(css for s, e, css in marks if s <= start and end <= e)
        piece = text[start:end]
        pieces.append(
            format_html('<mark class="{}">{}</mark>', classes, piece)
            if classes
            else conditional_escape(piece)
        )
    return mark_safe("".join(pieces))


@register.simple_tag
def choice_inputs(kind: str, name: str, options, selected):
    """The inputs of one choice group, built in Python: the labelling page repeats these for
    every claim (and the evidence list for every passage), which as template loops was most
    of the page's rendering time.

    options: (value, text) or (value, text, css, key) tuples; selected: the checked value, or
    a collection of them for checkboxes."""
    chosen = set(selected or ()) if kind == "checkbox" else {selected}
    kind, name = _escape(kind), _escape(name)
    parts = []
    for option in options:
        value, text = option[0], option[1]
        css = f' class="{_escape(option[2])}"' if len(option) > 2 and option[2] else ""
        key = option[3] if len(option) > 3 else ""
        checked = " checked" if value in chosen else ""
        data_key = f' data-key="{_escape(key)}"' if key else ""
        kbd = f"<kbd>{_escape(key)}</kbd> " if key else ""
        parts.append(
            f'<label{css}><input type="{kind}" name="{name}" value="{_escape(value)}"{data_key}'
            f"{checked}><span>{kbd}{_escape(text)}</span></label>"
        )
    return mark_safe("".join(parts))


@register.simple_tag
def claim_link(row, text: str, selected=None, oob: bool = False):
    """One claim in the answer text: a link to its editor (?claim=N, so the page works
    without JavaScript) carrying its own draft as data-label, with a mark of its support
    label -- dashed with "…" while the claim still lacks something. Built in Python: the
    page has one per claim, and as a template partial they were most of its rendering."""
    ordinal = row.claim.ordinal
    state = row.state
    classes = ["claim", state]
    if not row.complete:
        classes.append("incomplete")
    if selected is not None and not oob and ordinal == selected.claim.ordinal:
        classes.append("selected")
    mark = ""
    if state != "unlabelled":
        hint = ", incomplete" if not row.complete else ""
        mark = (
            f'<span class="label-mark {state}{" incomplete" if not row.complete else ""}">'
            f'<span class="visually-hidden">{_escape(row.label.get_support_display())}{hint}'
            "</span></span>"
        )
    oob_attr = ' hx-swap-oob="true"' if oob else ""
    return mark_safe(
        f'<a class="{" ".join(classes)}" id="claim-span-{ordinal}" href="?claim={ordinal}" '
        f"data-claim=\"{ordinal}\" data-label='{row.state_json}'{oob_attr}>"
        f'<span class="claim-number">{ordinal + 1}</span>{_escape(text)}{mark}</a>'
    )
