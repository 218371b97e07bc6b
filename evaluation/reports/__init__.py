"""The reports, one module per report or per part of one; each reads the project once and
hands the statistics modules (evaluation.metrics, agreement, calibration ...) plain arrays.
Every module here counts in the code version of stored reports
(annotate.common.computed.code_sources).

The evaluation report of variants:
- dataset: the project's data as the report reads it (load), its slices
- evaluation: retrieval, generation, abstention, latency and stage diagnosis (evaluate)
- comparison: two variants case by case (compare)
- limits: choosing a variant against limits set in advance (variant_limits)
- tables: the report and the comparison as flat tables (CSV, the command's text, the page)

The agreement report:
- agreement: agreement of the two reviewers, field by field, with intervals

The judge reports:
- judge_gold: the gold and a run's verdicts, as every judge report reads them
- calibration: a judge run against gold (calibration_report)
- judge_comparison: two runs on the same items (compare_runs)
- few_shot: few-shot examples from the judge_dev split (few_shot_examples)
- answer_detail: one answer as a run and gold see it (answer_detail)
- calibration_plan: the budget planner of a run (plan_report), a stored report
- judge_gate: the judge gate's verdict (gate_report)
- plan_gate_params: their inputs checked, and the stored plan's key (no statistics import)

And charts: the reports' SVG charts (bar, stage, latency, interval, heatmap, half-width curve).
"""
