"""The client: one method per thing a lead's script does, each one or a few HTTP requests.

Written by hand over `requests` rather than generated from the OpenAPI schema: the workflows
(an upload answered 202 and its job polled to the end, a gold set that streams or becomes an
export job, a report still being computed) are sequences of requests that a generated client
leaves to every script, and its thousands of generated lines would change at every schema
change. tests/client/ checks every request this client makes against the schema.

Projects are named by slug, judge runs by id (or name), jobs by the dict an upload returned
(or its id). What the API answers is returned as it is: dicts and lists of dicts."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import IO, Any

import requests

from claimdesk_client import __version__
from claimdesk_client.errors import NotFound, from_job, from_response

Upload = str | os.PathLike | IO[bytes]
FINAL = ("succeeded", "failed")
PAGE = 500  # the API's largest page


class Client:
    """A claimdesk server, seen with one person's token (Authorization: Token <key>).

    `timeout` bounds each HTTP request (seconds). `retries` is how many times a request
    answered 503 (the database or task queue briefly away; nothing was done) is sent again,
    after the Retry-After the server asks for. `poll_interval` is how often a job is polled;
    `wait_timeout` bounds the wait for a job or a report (None: as long as it is making
    progress: a job that lost its worker, or that no worker took, raises JobFailed)."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 60.0,
        retries: int = 0,
        poll_interval: float = 1.0,
        wait_timeout: float | None = None,
        session: requests.Session | None = None,
    ):
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.retries = retries
        self.poll_interval = poll_interval
        self.wait_timeout = wait_timeout
        self.session = session or requests.Session()
        self.session.headers["Authorization"] = f"Token {token.strip()}"
        self.session.headers["User-Agent"] = f"claimdesk-client/{__version__}"
        self.sleep: Callable[[float], None] = time.sleep  # tests count the waits

    def __repr__(self) -> str:
        return f"Client({self.base_url!r})"

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Close the kept-alive connections now. (Session.close() alone forgets urllib3's
        connection pools without closing their sockets, which then wait for the garbage
        collector; a server sees them open until then.)"""
        for adapter in self.session.adapters.values():
            pools = getattr(getattr(adapter, "poolmanager", None), "pools", None)
            if pools is not None:
                for key in pools.keys():  # noqa: SIM118 (urllib3's container refuses iteration)
                    pools[key].close()
        self.session.close()

    # --- Projects -------------------------------------------------------------------------

    def whoami(self) -> str:
        """Whose token this is: a quick check that it works (AuthError if not)."""
        return self.request("GET", "")["user"]

    def projects(self, *, state: str | None = None, role: str | None = None) -> list[dict]:
        """Your projects, with your role in each (`state`: draft, open, ...; `role`)."""
        return self._all("projects/", state=state, role=role)

    def project(self, slug: str) -> dict:
        """One project: its state, label schema and your role (NotFound without a role)."""
        return self.request("GET", f"projects/{slug}/")

    def import_bundle(
        self,
        path: Upload,
        *,
        project: str,
        name: str | None = None,
        replace: bool = False,
        confirm_deletions: bool = False,
        wait: bool = True,
    ) -> dict:
        """Import a bundle: a new project (you become its lead), or into one you lead (the
        same file again changes nothing). Returns the job, finished when `wait`: its
        `result` holds the counts. A refused file raises LineErrors with every line.
        `replace` replaces changed items no one has labelled; one that would delete data
        raises JobFailed listing `deletions` unless `confirm_deletions`."""
        if replace or confirm_deletions:
            options = {"replace": replace, "confirm_deletions": confirm_deletions}
            response = self._send("POST", f"projects/{project}/bundle/", data=options, upload=path)
        else:
            fields = {"slug": project, "name": name or ""}
            response = self._send("POST", "projects/", data=fields, upload=path)
        return self._job(response, wait)

    def import_ragas(
        self,
        path: Upload,
        *,
        project: str,
        variant: str,
        name: str | None = None,
        label_schema: dict | str | None = None,
        replace: bool = False,
        confirm_deletions: bool = False,
        wait: bool = True,
    ) -> dict:
        """Import a Ragas evaluation dataset (JSONL or CSV) as the answers of `variant`, into
        a new project or one you lead; `label_schema` (a dict, or its JSON text) sets the
        project's. As import_bundle otherwise."""
        fields: dict[str, Any] = {"format": "ragas", "variant": variant}
        if label_schema is not None:
            schema = label_schema if isinstance(label_schema, str) else json.dumps(label_schema)
            fields["label_schema"] = schema
        if replace or confirm_deletions:
            fields.update(replace=replace, confirm_deletions=confirm_deletions)
            response = self._send("POST", f"projects/{project}/bundle/", data=fields, upload=path)
        else:
            fields.update(slug=project, name=name or "")
            response = self._send("POST", "projects/", data=fields, upload=path)
        return self._job(response, wait)

    def export_bundle(self, path: str | os.PathLike, *, project: str) -> Path:
        """Write the project back as a bundle (JSONL) to `path`."""
        with self._send("GET", f"projects/{project}/bundle/", stream=True) as response:
            return _save(response, path)

    def set_label_schema(
        self,
        project: str,
        *,
        support: str,
        claim_fields: Iterable[str] = (),
        answer_fields: Iterable[str] = (),
    ) -> dict:
        """Which fields reviewers label (`support`: three_way or binary); only before
        labelling opens (Conflict after). Returns the project."""
        body = {
            "support": support,
            "claim_fields": list(claim_fields),
            "answer_fields": list(answer_fields),
        }
        return self.request("PUT", f"projects/{project}/label-schema/", json=body)

    def open_labelling(self, project: str) -> dict:
        """Lock the claims and open the queue; returns the project (Conflict if open)."""
        return self.request("POST", f"projects/{project}/open/")

    def import_labels(self, path: Upload, *, project: str, wait: bool = True) -> dict:
        """Import reviewers' submitted labels made elsewhere (JSONL): the job, whose `result`
        is {created, unchanged}. All or nothing: LineErrors with every line."""
        response = self._send("POST", f"projects/{project}/labels/", upload=path)
        return self._job(response, wait)

    def import_gold(
        self,
        path: Upload,
        *,
        project: str,
        source: str,
        replace: bool = False,
        wait: bool = True,
    ) -> dict:
        """Import gold from elsewhere, one adjudicated label per answer, kept with `source`
        (a benchmark's name, an expert's pass); `replace` replaces imported gold this file
        labels differently. Returns the job; LineErrors with every line."""
        fields = {"source": source, "replace": replace}
        response = self._send("POST", f"projects/{project}/gold-imports/", data=fields, upload=path)
        return self._job(response, wait)

    # --- Members --------------------------------------------------------------------------

    def members(self, project: str, *, role: str | None = None) -> list[dict]:
        """The project's members: [{username, role}]."""
        return self._all(f"projects/{project}/members/", role=role)

    def add_member(
        self, project: str, username: str, *, role: str, password: str | None = None
    ) -> dict:
        """Give `username` a role (reviewer or lead) in the project, creating the account
        (with `password`) if it does not exist and you may; Refused names the field."""
        body = {"username": username, "role": role}
        if password is not None:
            body["password"] = password
        return self.request("POST", f"projects/{project}/members/", json=body)

    # --- Gold -----------------------------------------------------------------------------

    def gold(
        self,
        project: str,
        *,
        item: str | None = None,
        split: str | None = None,
        decided_only: bool | None = None,
        with_context: bool | None = None,
    ) -> Iterator[dict]:
        """The gold set, one dict per row (`item`: claim, answer or all; `split`: judge_dev,
        judge_test or all), streamed as it arrives. A set too large to stream is exported by
        a worker first, then read from its file. The request is made at once (errors are
        raised here); iterate the result to read the rows."""
        filters = _gold_filters(item, split, decided_only, with_context)
        response = self._gold_response(project, "jsonl", filters)
        return _rows(response)

    def export_gold(
        self,
        path: str | os.PathLike,
        *,
        project: str,
        format: str | None = None,  # noqa: A002 (the command's option)
        item: str | None = None,
        split: str | None = None,
        decided_only: bool | None = None,
        with_context: bool | None = None,
    ) -> Path:
        """Write the gold set to `path`, as CSV or JSONL (`format`; by default from the
        file's suffix: .csv is CSV, anything else JSONL)."""
        fmt = format or ("csv" if str(path).lower().endswith(".csv") else "jsonl")
        filters = _gold_filters(item, split, decided_only, with_context)
        with self._gold_response(project, fmt, filters) as response:
            return _save(response, path)

    def _gold_response(self, project: str, fmt: str, filters: dict) -> requests.Response:
        response = self._send("GET", f"projects/{project}/gold.{fmt}", params=filters, stream=True)
        if response.status_code == 202:  # past CLAIMDESK_GOLD_STREAM_MAX_ROWS: an export job
            job = self.wait(_json(response))
            response.close()
            response = self._send("GET", job["download_url"], stream=True)
        return response

    # --- Releases -------------------------------------------------------------------------

    def releases(self, project: str) -> list[dict]:
        """The project's gold releases, newest first (name, row_count, sha256, downloads)."""
        return self._all(f"projects/{project}/releases/")

    def release(self, project: str, name: str) -> dict:
        """One release, with its dataset card (`card`, Markdown)."""
        return self.request("GET", f"projects/{project}/releases/{name}/")

    def create_release(
        self,
        project: str,
        name: str,
        *,
        item: str | None = None,
        split: str | None = None,
        decided_only: bool | None = None,
        wait: bool = True,
    ) -> dict:
        """Freeze the project's gold set as release `name` (v1, 2026-12-07 ...; `item`,
        `split` and `decided_only` as for gold()). Returns the release; a gold set too large
        for a request is released by a worker: with `wait` its job is waited for and the
        release returned, else the job. A taken or malformed name raises Refused."""
        body = _present(
            {"name": name, "item": item, "judge_split": split, "decided_only": decided_only}
        )
        response = self._send("POST", f"projects/{project}/releases/", json=body)
        if response.status_code != 202:
            return _json(response)
        job = _json(response)
        if not wait:
            return job
        return self.release(project, self.wait(job)["result"]["release"])

    def download_release(
        self,
        project: str,
        name: str,
        path: str | os.PathLike,
        *,
        format: str | None = None,  # noqa: A002 (as export_gold's)
    ) -> Path:
        """Write release `name` to `path`: JSONL (the frozen file, byte for byte: its SHA-256
        is the release's `sha256`), CSV or Parquet (`format`; by default from the file's
        suffix: .csv, .parquet, anything else JSONL)."""
        suffix = str(path).lower().rsplit(".", 1)[-1]
        fmt = format or (suffix if suffix in ("csv", "parquet") else "jsonl")
        url = f"projects/{project}/releases/{name}/gold.{fmt}"
        with self._send("GET", url, stream=True) as response:
            return _save(response, path)

    def diff_releases(self, project: str, before: str, after: str) -> dict:
        """What changed from release `before` to `after`: rows added, removed and changed,
        field by field (`counts`, `by_field`, `changed`)."""
        return self.request("GET", f"projects/{project}/releases/{after}/diff/", before=before)

    # --- Judges and reports ---------------------------------------------------------------

    def push_judge_run(
        self, path: Upload, *, project: str, name: str | None = None, background: bool = False
    ) -> dict:
        """Import a model judge's run (JSONL); `name` defaults to the file's `judge`, and a
        name already used is refused. Returns the run ({id, name, verdicts, ok, ...}).
        Imported in the request, or with `background` by a worker (what a run of 100,000
        verdicts wants), waited for. LineErrors with every line either way."""
        fields = {"name": name} if name else {}
        endpoint = f"projects/{project}/judge-runs/"
        if not background:
            return _json(self._send("POST", endpoint, data=fields, upload=path))
        prefer = {"Prefer": "respond-async"}
        response = self._send("POST", endpoint, data=fields, upload=path, headers=prefer)
        job = self._job(response, wait=True)
        return self.judge_run(project, job["result"]["run"])

    def judge_runs(
        self, project: str, *, name: str | None = None, model: str | None = None
    ) -> list[dict]:
        """The project's judge runs, newest first (`name`, `model` filter)."""
        return self._all(f"projects/{project}/judge-runs/", name=name, model=model)

    def judge_run(self, project: str, run: int | str | dict) -> dict:
        """One run with its counts: by id, by name, or the dict a push returned."""
        return self.request("GET", f"projects/{project}/judge-runs/{self._run_id(project, run)}/")

    def calibration(self, project: str, run: int | str | dict, *, split: str | None = None) -> dict:
        """The judge run against gold (`split`: judge_test by default, judge_dev, all):
        accuracy, kappa, TPR/TNR, the corrected unsupported share. Waits while a worker
        computes it."""
        run_id = self._run_id(project, run)
        return self._report(f"projects/{project}/judge-runs/{run_id}/calibration/", split=split)

    def agreement(
        self,
        project: str,
        *,
        slice: str | None = None,  # noqa: A002
        guideline_version: int | None = None,
    ) -> dict:
        """Inter-reviewer agreement per field, slice and reviewer pair; with
        `guideline_version`, over the label sets made under that version of the guidelines."""
        return self._report(
            f"projects/{project}/agreement/", slice=slice, guideline_version=guideline_version
        )

    def evaluation(
        self,
        project: str,
        *,
        k: Iterable[int] | None = None,
        variants: Iterable[str] | None = None,
        slice: str | None = None,  # noqa: A002
        latency_budget_ms: float | None = None,
        unsupported_limit: float | None = None,
    ) -> dict:
        """Retrieval and generation metrics per variant and slice."""
        return self._report(
            f"projects/{project}/evaluation/",
            k=None if k is None else ",".join(str(value) for value in k),
            variant=None if variants is None else list(variants),
            slice=slice,
            latency_budget_ms=latency_budget_ms,
            unsupported_limit=unsupported_limit,
        )

    def compare(self, project: str, a: str, b: str, *, k: int | None = None) -> dict:
        """Variant `a` against `b`, cases paired: fixed, broken, unchanged."""
        return self.request("GET", f"projects/{project}/evaluation/compare/", a=a, b=b, k=k)

    def _run_id(self, project: str, run: int | str | dict) -> int:
        if isinstance(run, dict):
            return run["id"]
        if isinstance(run, int):
            return run
        found = self.judge_runs(project, name=run)
        if not found:
            raise NotFound(f"no judge run named {run!r} in project {project!r}", status=404)
        return found[0]["id"]

    def _report(self, path: str, **params: Any) -> dict:
        """A stored report: 202 while a worker computes the first one, asked again after
        its Retry-After."""
        deadline = self._deadline()
        while True:
            response = self._send("GET", path, params=_present(params))
            if response.status_code != 202:
                return _json(response)
            self._check(deadline, f"the report at {path}")
            self.sleep(_retry_after(response) or self.poll_interval)

    # --- Jobs -----------------------------------------------------------------------------

    def job(self, job: str | dict) -> dict:
        """A background job as it is now: status, progress, then result or errors."""
        return self.request("GET", _job_url(job))

    def wait(self, job: str | dict) -> dict:
        """Poll the job until it ends. Returns it when it succeeded; raises LineErrors (a
        refused file, every line) or JobFailed (any other failure, or a job that lost its
        worker or that no worker took: `job["retryable"]`)."""
        if not isinstance(job, dict):
            job = self.job(job)
        deadline = self._deadline()
        while job["status"] not in FINAL:
            if job.get("retryable"):  # stalled, or queued longer than any worker takes
                state = "lost its worker" if job["status"] == "running" else "no worker took it"
                raise from_job({**job, "failure": f"{state}: Client.retry(job) sends it again"})
            self._check(deadline, f"job {job['id']}")
            self.sleep(self.poll_interval)
            job = self.job(job)
        if job["status"] == "failed":
            raise from_job(job)
        return job

    def retry(self, job: str | dict, *, confirm_deletions: bool = False, wait: bool = True) -> dict:
        """Queue a failed job, or one that lost its worker, again; `confirm_deletions` goes
        on with a replace whose job failed listing its deletions."""
        url = _job_url(job) + "retry/"
        response = self._send("POST", url, json={"confirm_deletions": confirm_deletions})
        return self._job(response, wait)

    def _job(self, response: requests.Response, wait: bool) -> dict:
        job = _json(response)
        return self.wait(job) if wait else job

    def _deadline(self) -> float | None:
        return None if self.wait_timeout is None else time.monotonic() + self.wait_timeout

    def _check(self, deadline: float | None, what: str) -> None:
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not end within {self.wait_timeout} s")

    # --- HTTP -----------------------------------------------------------------------------

    def request(
        self, method: str, path: str, *, json: Any = None, **params: Any
    ) -> dict | list | None:
        """Any endpoint: `path` under /api/v1/ ("projects/demo/tasks/"), or absolute from the
        site's root ("/api/v1/..."); keyword arguments are the query string (None left
        out). Returns the parsed JSON (None for 204); errors raise as everywhere."""
        response = self._send(method, path, params=_present(params), json=json)
        return None if response.status_code == 204 else _json(response)

    def _all(self, path: str, **filters: Any) -> list[dict]:
        """Every item of a paginated list: pages of the largest size, by offset, until
        `count` are read (or a page comes back empty, should items go meanwhile)."""
        items: list[dict] = []
        while True:
            page = self.request("GET", path, limit=PAGE, offset=len(items), **filters)
            items.extend(page["results"])
            if not page["results"] or len(items) >= page["count"]:
                return items

    def _url(self, path: str) -> str:
        if path.startswith(("http://", "https://")):
            return path
        if path.startswith("/"):
            return self.base_url + path
        return f"{self.base_url}/api/v1/{path}"

    def _send(
        self,
        method: str,
        path: str,
        *,
        params: dict | None = None,
        json: Any = None,
        data: dict | None = None,
        upload: Upload | None = None,
        headers: dict | None = None,
        stream: bool = False,
    ) -> requests.Response:
        """One request, sent again after a 503's Retry-After up to `retries` times (the
        server did nothing: it says so); an error answer raises its ClaimdeskError."""
        url = self._url(path)
        form = None if data is None else {key: _form_value(value) for key, value in data.items()}
        seekable = hasattr(upload, "read") and hasattr(upload, "seek") and upload.seekable()
        start = upload.tell() if seekable else None
        for attempt in range(self.retries + 1):
            with ExitStack() as files:
                response = self.session.request(
                    method,
                    url,
                    params=params,
                    json=json,
                    data=form,
                    files=None if upload is None else {"file": _opened(upload, files, start)},
                    headers=headers,
                    timeout=self.timeout,
                    stream=stream,
                )
            if response.status_code == 503 and attempt < self.retries:
                wait = _retry_after(response)
                response.close()
                self.sleep(self.poll_interval if wait is None else wait)
                continue
            if response.status_code >= 400:
                with response:
                    raise from_response(
                        response.status_code,
                        _body(response),
                        what=f"{method} {response.request.path_url}",
                        retry_after=_retry_after(response),
                    )
            return response
        raise AssertionError("unreachable")  # the last attempt returns or raises


# --- Helpers ---------------------------------------------------------------------------------


def _present(params: dict) -> dict:
    return {key: value for key, value in params.items() if value is not None}


def _form_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _gold_filters(item, split, decided_only, with_context) -> dict:
    return _present(
        {
            "item": item,
            "judge_split": split,
            "decided_only": None if decided_only is None else _form_value(decided_only),
            "with_context": None if with_context is None else _form_value(with_context),
        }
    )


def _opened(upload: Upload, files: ExitStack, start: int | None) -> tuple[str, IO[bytes]]:
    """(file name, stream) of an upload, for each attempt afresh: a path is opened, a file
    object rewound to `start`, where it stood before the first attempt."""
    if hasattr(upload, "read"):
        if start is not None:
            upload.seek(start)
        return os.path.basename(getattr(upload, "name", "") or "upload.jsonl"), upload
    return os.path.basename(os.fspath(upload)), files.enter_context(open(upload, "rb"))


def _job_url(job: str | dict) -> str:
    return job["url"] if isinstance(job, dict) else f"jobs/{job}/"


def _retry_after(response: requests.Response) -> float | None:
    value = response.headers.get("Retry-After")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:  # an HTTP date
        return max(parsedate_to_datetime(value).timestamp() - time.time(), 0.0)
    except (TypeError, ValueError):
        return None


def _body(response: requests.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text


def _json(response: requests.Response) -> Any:
    with response:
        return response.json()


def _rows(response: requests.Response) -> Iterator[dict]:
    with response:
        for line in response.iter_lines(chunk_size=65536):
            if line:
                yield json.loads(line)


def _save(response: requests.Response, path: str | os.PathLike) -> Path:
    target = Path(path)
    with target.open("wb") as out:
        for chunk in response.iter_content(chunk_size=65536):
            out.write(chunk)
    return target
