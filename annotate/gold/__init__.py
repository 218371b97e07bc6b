"""Gold: what the reviewers' labels, the leads' decisions and imported gold make of each item,
derived where it is read (nothing here is stored), and the gold set's page and export.

- pairs: the two reviewers' labels of each item, aligned, and each field's gold and source
  (agreed, adjudicated, pending); an answer's gold row from its claims (answer_gold)
- imported: gold from elsewhere read beside the pairs (gold_for_project: every gold item),
  and the items imported with no second reviewer (imported_alone)
- summary: what the gold page's counts and the adjudication queue read of every pair
  (pair_summary), one answer's share at a time
- splits: the judge split of a case (judge_dev / judge_test)
- selectors: the summary and imported-alone counts kept per data version, derived again only
  for the answers that changed
- exports: the gold export (JSONL, CSV), its fingerprint and size, the gold page's counts
- parquet: the same rows as Parquet with typed columns, written in row groups
- views, forms: the gold page and the download

The adjudication queue, read from the same summary, is annotate.adjudication.queue. Every
module but selectors, exports, views and forms is part of the digest that dates stored
reports (annotate.common.computed.code_sources).
"""
