"""A lead's adjudication: deciding the fields two reviewers disagree on.

- queue: the adjudication queue, most serious disagreement first, read from the pair summary
  (annotate.gold.summary)
- services: freezing a task's labels (start_adjudication) and recording a lead's decisions
  (adjudicate), each checked against the field's vocabulary and the task's version
- selectors: one task as the adjudication screen shows it (AdjudicationScreen: both
  reviewers' values, the gold so far, never the variant), its audit trail, field words
- views, forms: the queue page with its filters, and the task's screen

The API's adjudication endpoints are in annotate.api.
"""
