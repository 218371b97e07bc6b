"""A lead's adjudication: deciding the fields two reviewers disagree on.

- queue: the adjudication queue, most serious disagreement first, read from the pair summary
  (annotate.gold.summary)
- services: freezing a task's labels (start_adjudication) and recording a lead's decisions
  (adjudicate), each checked against the field's vocabulary and the task's version; a
  lead resolving a reviewer's flag (resolve_flag)
- selectors: one task as the adjudication screen shows it (AdjudicationScreen: every
  reviewer's values side by side, the gold so far, never the variant), its audit trail, field words;
  the reviewers' flags (flags) and the queue's decided count (decided_of)
- reaudit: after the guidelines change, the gold decided under older versions
  (reaudit_list) and the lead's keep or re-open of it (re-opened tasks join the queue)
- views, forms: the queue page with its filters, its progress and the open flags, the
  task's screen, resolving a flag, the re-audit page

The API's adjudication endpoints are in annotate.api.
"""
