from django import template
from django.utils.html import format_html
from django.utils.safestring import mark_safe

register = template.Library()


@register.filter
def get_item(mapping, key):
    """mapping[key] in a template, or None (for dicts keyed by strings with dots or colons)."""
    if not mapping:
        return None
    return mapping.get(key)


@register.simple_tag
def field_error(errors, *parts, oob=False):
    """The error slot of one field, e.g. {% field_error errors "claim" 0 "evidence_quote" %}.
    It is always rendered (hidden when empty) so htmx can swap a new message into it."""
    key = ".".join(str(p) for p in parts)
    message = (errors or {}).get(key, "")
    slot_id = "err-" + key.replace(".", "-").replace("_", "-")
    return format_html(
        '<p class="field-error" id="{}" role="alert"{}{}>{}</p>',
        slot_id,
        mark_safe(' hx-swap-oob="true"') if oob else "",
        "" if message else mark_safe(" hidden"),
        message,
    )
