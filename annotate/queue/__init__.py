"""Which task a reviewer labels next.

- services: the next task (next_task: an answer's free slot, taken under a row lock, blind
  to variants; or, at the project's check rate, a gold check the reviewer never held),
  giving a task back (release_task) and releasing abandoned ones (release_abandoned)
- views: the reviewer's project page, taking the next task, the empty queue's page
"""
