"""Signed webhooks: a project's events sent to the URLs its leads register (docs/webhooks.md).

- services: registering, changing and deleting endpoints (a `whsec_` secret generated for
  each), `emit` (an event's delivery rows, written in the event's own transaction; their
  sending queued once it commits) and the test event
- events: the events and their payloads (ids and counts, never a variant or a label), and the
  one-line hooks the labelling, adjudication and jobs code calls
- sending: one attempt of one delivery (signed with `standardwebhooks`, POSTed with a short
  timeout, its address checked), the retry schedule, and the sweep of due deliveries
- tasks: the task a worker runs per delivery (`deliver`)
- selectors: a project's endpoints and its delivery log
- views, forms: the lead's Webhooks page (endpoints, the test event, the delivery log)

The API's face is annotate.api.webhooks; `manage.py deliver_webhooks` sends what is due.
"""
