"""Statistics and reports.

At the top, the statistics: pure functions over plain arrays, imported only by the code that
computes (STYLE 12): metrics (retrieval, generation, latency, bootstrap), agreement (Cohen's
kappa, intervals), calibration (Rogan-Gladen, PPI), estimators (PPI++, strata, the judge
gate), sampling_design (calibration samples, the budget planner), multirater (more than two
reviewers: Krippendorff's alpha, Fleiss' kappa, every pair), quality (accuracy on gold checks,
the drift alarm), intervals, caveats.

- reports/: one module per report, reading the project and calling the statistics
- views/: the report pages (evaluation and agreement)
- judges/: model-judge runs, from their import to their pages
- api.py: the reports and judge runs in the REST API; models.py: judge runs and verdicts
- tasks.py: what a judge-run import job does, registered with jobs.kinds

The rule for pages: a page of a report sits in views/; a capability with its own import and
pages (judges) is a package holding both. Every module here but the pages, the API and the
app's plumbing counts in the code version of stored reports (annotate.common.computed.code_sources).
"""
