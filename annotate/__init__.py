"""The labelling domain: projects, their data, reviewers' labels, adjudication and gold.

The folders are the capabilities; each holds its services (writes: keyword-only, atomic),
selectors (reads), views and forms, and its package docstring names its modules:

- projects/: creating a project, its set-up (dashboard, guidelines, label schema, claim
  boundaries, the blinding check) and opening labelling
- imports/: everything that brings data in: the bundle parser, bundle, Ragas, label and gold
  imports, the upload pages; and the bundle export
- queue/: which task a reviewer gets next, skipping, releasing abandoned tasks
- labelling/: the reviewer's screen: drafts, checks, submitting, reopening, preferences
- adjudication/: the adjudication queue and screen, a lead's decisions
- gold/: gold derived from the pairs and imported gold, the gold page and export (JSONL, CSV,
  Parquet)
- checks/: gold checks: decided answers a lead marks, served by the queue at the check rate
  like any task, their label sets compared with gold (never part of agreement or gold)
- releases/: the gold set frozen under a name (release_gold), its dataset card, its Hugging Face
  dataset folder and its diff (diff_gold)
- members/: who is in a project in which role, API tokens, the locked-out login page
- webhooks/: a project's signed webhooks: endpoints, `emit` (deliveries written with the event),
  the worker's sending and retries, the lead's page and delivery log
- api/: the REST API, one module per capability (jobs' endpoints too), and the base every
  API shares
- common/: what every capability uses (errors, roles and the project_view decorator, bulk
  writes, JSON and CSV safety, paging, the docs pages)

At the top: models.py (every model, with migrations/), schema.py (the label schema, pure),
admin.py, urls.py (every page, named by its folder), tasks.py (what annotate's background jobs
do: bundle, Ragas, label and gold imports, the gold export, registered with jobs.kinds; and the
worker's refresh of a stored report) and report_kinds.py (the app's computed reports, kept by
common/computed.py: one rule for when a report is stale). management/commands/ and
templatetags/ are where Django finds them.
"""
