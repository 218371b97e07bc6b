"""A person's own settings for the labelling screen."""

from __future__ import annotations

from django.db import transaction

from annotate.models import Preferences


@transaction.atomic
def set_preferences(*, user, single_key_shortcuts: bool) -> Preferences:
    preferences, _ = Preferences.objects.update_or_create(
        user=user, defaults={"single_key_shortcuts": single_key_shortcuts}
    )
    return preferences
