"""The reviewer's labelling screen: one task, its claims and whole-answer labels.

- services: drafts (save_claim_label, save_answer_label, each checked against its version),
  the checks a label passes, submitting (submit_labels) and reopening a task, flagging it
  for the lead (flag_task)
- selectors: the task as the screen shows it (TaskScreen, ClaimRow, PassageRow), the
  reviewer's task lookups (reviewer_task, claim_to_save: SQL, see rows), progress with the
  day's counter, the reviewer's tasks searched and filtered (my_tasks)
- rows: model instances from the task views' hand-written SQL
- task_status: what the screen says about a task's completeness, from the services' checks
- preferences: a person's settings for the screen (set_preferences)
- views, forms: the task's page and its drafts, submit, skip, reopen, flag, my tasks,
  preferences

Which task comes next is annotate.queue.
"""
