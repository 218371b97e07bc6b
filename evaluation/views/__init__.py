"""The report pages, lead-only: each shows a report a worker stored (or computes a small
project's in the request) and imports no statistics library to show it.

- report: the evaluation page (variants, slices, the comparison, the case tables)
- agreement: the agreement page
- reviewers: the Reviewers page (operations, checks and drift per reviewer)

The judge runs' pages are evaluation.judges.
"""
