"""The annotate half of the REST API (/api/v1/), one module per capability, each holding its
endpoints and their serializers:

- base: what every endpoint shares, evaluation's and jobs' APIs included (base views, parsers,
  uploads, pagination, streamed downloads, the documented errors, common serializer fields)
- projects: the caller's projects, creating one, its details, label schema, opening labelling
- imports: a bundle or Ragas upload (and the bundle export), labels and gold made elsewhere
- members: a project's members
- tasks: the reviewer's tasks and drafts, by task number
- adjudication: the queue and a lead's decisions
- flags: a reviewer's flag on their own task for the lead; the leads' list, resolving one
- gold: the gold export
- permissions: the project role every endpoint checks; openapi: schema hooks; urls: routes
"""
