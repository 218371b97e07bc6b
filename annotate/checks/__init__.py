"""Gold checks: decided answers a lead marks as checks, served by the queue at the project's
check rate to reviewers who never labelled them, exactly like any task.

- services: marking and unmarking checks (one by one, every decided answer, a file of answer
  ids), setting the project's check rate
- selectors: a project's checks, its decided answers, and `check_results`: every reviewer's
  check label sets compared with gold, field by field, in submission order (what reviewer
  accuracy and drift read)
- forms, views: the gold page's and the adjudication screen's buttons, the import, the rate
  on the guidelines page

Blinding: a check is an Assignment with `is_check` set. Nothing a reviewer reaches reads the
flag; every reader of label sets that feeds agreement, gold, adjudication or calibration leaves
check label sets out (annotate.gold.pairs, evaluation.reports.agreement ...).
"""
