"""load_demo prints the address `make run` will serve on: bin/run-dev passes ADDRESS to
runserver, and the printed login URL follows it instead of always naming port 8000."""

import io

import pytest
from django.core.management import call_command

from annotate.management.commands.load_demo import demo_url


@pytest.mark.parametrize(
    "address,url",
    [
        (None, "http://127.0.0.1:8000/"),
        ("", "http://127.0.0.1:8000/"),
        ("8123", "http://127.0.0.1:8123/"),
        ("127.0.0.1:8124", "http://127.0.0.1:8124/"),
        ("0.0.0.0:8125", "http://127.0.0.1:8125/"),
        ("localhost:8126", "http://localhost:8126/"),
        ("[::1]:8127", "http://[::1]:8127/"),
        ("[::]:8128", "http://127.0.0.1:8128/"),
        ("example.test", "http://example.test:8000/"),
    ],
)
def test_the_demo_url_follows_make_run_s_address(monkeypatch, address, url):
    if address is None:
        monkeypatch.delenv("ADDRESS", raising=False)
    else:
        monkeypatch.setenv("ADDRESS", address)
    assert demo_url() == url


@pytest.mark.django_db
def test_load_demo_prints_the_port_it_will_be_served_on(monkeypatch):
    monkeypatch.setenv("ADDRESS", "127.0.0.1:8765")
    out = io.StringIO()
    call_command("load_demo", stdout=out)
    assert "Log in at http://127.0.0.1:8765/ with" in out.getvalue()
    assert ":8000" not in out.getvalue()
