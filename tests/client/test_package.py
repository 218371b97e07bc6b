"""The client is a package of its own, versioned with the API: its API_VERSION is the OpenAPI
schema's info.version and its own major version; `make run` and `make test` install it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import claimdesk_client

from tests.client.conftest import schema

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "client"


def test_the_client_speaks_the_version_of_the_api_the_schema_states():
    assert schema()["info"]["version"] == claimdesk_client.API_VERSION
    assert claimdesk_client.__version__.split(".")[0] == claimdesk_client.API_VERSION
    assert re.fullmatch(r"\d+\.\d+\.\d+", claimdesk_client.__version__)


def test_the_package_reads_its_version_from_the_module_and_needs_only_requests():
    project = tomllib.loads((PACKAGE / "pyproject.toml").read_text())
    assert project["project"]["name"] == "claimdesk-client"
    assert project["project"]["dynamic"] == ["version"]
    dynamic = project["tool"]["setuptools"]["dynamic"]["version"]
    assert dynamic == {"attr": "claimdesk_client.__version__"}
    assert project["project"]["dependencies"] == ["requests>=2.28"]
    assert (PACKAGE / "claimdesk_client" / "py.typed").exists()


def test_the_tests_import_the_working_copy():
    """An editable install (or PYTHONPATH=client): a stale copy in site-packages would test
    old code."""
    assert Path(claimdesk_client.__file__).resolve().parent == PACKAGE / "claimdesk_client"


def test_make_run_installs_it_editable():
    """`make run` installs it (the README's example imports it), and so `make test` too;
    a change to its pyproject installs it again."""
    makefile = (ROOT / "Makefile").read_text()
    rule = re.search(r"^\$\(VENV\)/\.installed: (.*)\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert rule and "client/pyproject.toml" in rule.group(1).split()
    assert "\t$(BIN)/pip install -q -e client\n" in rule.group(2)
    assert re.search(r"^\$\(VENV\)/\.installed-test: .*\$\(VENV\)/\.installed", makefile, re.M)
