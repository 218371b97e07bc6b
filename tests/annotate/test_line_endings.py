"""A file saved with old Mac line endings (a lone carriage return ends each line) imports the
same from a command as from a page or the API: the uploads are stored and read back through
Django's File, which ends lines at \\r too, and a command's open() or a raw request body end
them at \\n only. annotate.imports.lines.line_ends makes every importer read lines alike."""

from __future__ import annotations

import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from annotate.imports.lines import JsonLines, line_ends
from annotate.members.services import add_member
from annotate.models import Assignment, LabelRevision
from annotate.projects.opening import open_labelling
from jobs import accept as jobs
from jobs.models import Job
from tests.conftest import FIXTURES, import_fixture

pytestmark = pytest.mark.django_db


def _opened_demo(slug: str):
    project = import_fixture("demo.jsonl", slug)
    for name in ("alice", "bob"):
        add_member(project=project, username=name, role="reviewer")
    return open_labelling(project=project)


def test_a_label_file_with_cr_endings_imports_alike_from_the_command_and_an_upload(
    tmp_path, reviewer_a, reviewer_b, lead
):
    lines = (FIXTURES / "demo_labels.jsonl").read_bytes().splitlines()
    cr_only = b"\r".join(lines) + b"\r"
    path = tmp_path / "labels.jsonl"
    path.write_bytes(cr_only)

    by_command = _opened_demo("by-command")
    out = io.StringIO()
    call_command("import_labels", str(path), "--project", by_command.slug, stdout=out)
    assert f"Imported {len(lines)} label set(s)" in out.getvalue()

    by_upload = _opened_demo("by-upload")
    job = jobs.start_import(
        kind=Job.Kind.LABEL_IMPORT,
        user=lead,
        upload=SimpleUploadedFile("labels.jsonl", cr_only),
        slug=by_upload.slug,
        project=by_upload,
    )
    assert job.status == Job.Status.SUCCEEDED, job.failure
    assert job.result["created"] == len(lines)
    for project in (by_command, by_upload):
        assert LabelRevision.objects.filter(assignment__project=project).count() == len(lines)
        assert Assignment.objects.filter(project=project, status="submitted").count() == len(lines)


def test_lines_end_at_lf_crlf_and_a_lone_cr_and_are_numbered_so():
    raw = [b'{"a": 1}\r{"a": 2}\r\n', b"\r", b'{"a": 3}\n', b"{x\r"]
    text = ['{"a": 1}\r{"a": 2}\r\n', "\r", '{"a": 3}\u2028\n', "{x\r"]
    assert list(line_ends(raw)) == [b'{"a": 1}\r', b'{"a": 2}\r\n', b"\r", b'{"a": 3}\n', b"{x\r"]
    # A str is split at \r alone: U+2028 may stand inside a JSON string.
    assert list(line_ends(text))[3] == '{"a": 3}\u2028\n'
    errors: list = []
    assert [(n, obj["a"]) for n, obj in JsonLines(raw, errors)] == [(1, 1), (2, 2), (4, 3)]
    assert [e.line for e in errors] == [5]
