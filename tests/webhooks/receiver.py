"""A webhook receiver on a port the OS assigns: an http.server in a thread that records every
request and answers from a script (a status, or how long to hang first)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """`answers`: what each request in turn gets: an HTTP status, or ("hang", seconds) to
    sleep before a 200; past the end, 200."""

    answers: list = field(default_factory=list)
    received: list[Received] = field(default_factory=list)

    def __post_init__(self):
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with receiver.lock:
                    receiver.received.append(Received(dict(self.headers), body))
                    answer = receiver.answers.pop(0) if receiver.answers else 200
                if isinstance(answer, tuple):
                    time.sleep(answer[1])
                    answer = 200
                try:
                    self.send_response(answer)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                except OSError:
                    pass  # the sender gave up waiting

            def log_message(self, *args):
                pass

        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hooks"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver(settings):
    """Start receivers with `receiver(answers)`; endpoints on this machine are allowed."""
    settings.CLAIMDESK_WEBHOOK_ALLOW_PRIVATE = True
    started: list[Receiver] = []

    def start(answers=()) -> Receiver:
        started.append(Receiver(list(answers)))
        return started[-1]

    yield start
    for one in started:
        one.stop()
