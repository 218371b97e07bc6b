"""Model judges: a judge run from upload to its pages.

- runs: parsing and importing a run file, all or nothing (import_judge_run), and which
  judges share a model with the system they judge (same_model, self_judged_counts)
- list_views: the list of runs and the upload, which compute no statistic
- views: a run's calibration page and JSON, comparing two runs, one answer, the few-shot file
- urls: their routes, each view imported on its first request (config.lazy)

The judge reports themselves are evaluation.reports (calibration, judge_comparison,
few_shot, answer_detail).
"""
