"""Management commands that scripts run (imports, exports, reports, members) skip Django's
system checks: the checks load every URL and view, and check nothing these commands touch.
export_gold of the demo project took 1.0 s with them, 0.8 s without."""

from __future__ import annotations

import pytest
from django.core import checks
from django.core.management import ManagementUtility, get_commands, load_command_class

OURS = ("annotate", "evaluation", "jobs")
# Run once per installation or for hours: the checks are worth their cost there.
KEEP_CHECKS = {"worker", "load_demo"}


def test_every_command_of_ours_but_the_long_running_ones_skips_the_checks():
    ours = {name: app for name, app in get_commands().items() if app in OURS}
    assert {"export_gold", "import_bundle", "add_member"} <= ours.keys()
    checked = [
        name
        for name, app in ours.items()
        if name not in KEEP_CHECKS and load_command_class(app, name).requires_system_checks
    ]
    assert not checked


@pytest.mark.django_db
def test_a_command_run_from_the_shell_runs_no_check(monkeypatch, capsys):
    ran = []
    monkeypatch.setattr(checks, "run_checks", lambda *args, **kwargs: ran.append(args) or [])
    with pytest.raises(SystemExit):
        ManagementUtility(["manage.py", "export_gold", "--project", "nope"]).execute()
    assert "No project 'nope'" in capsys.readouterr().err
    assert ran == []
