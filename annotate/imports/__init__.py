"""Everything that brings data in, and the bundle format's way back out.

Reading a file (no ORM):
- lines: reading an upload line by line and reporting every problem the same way for every
  importer (JsonLines, BundleError, BundleInvalid)
- bundles: the bundle parser (docs/bundle-format.md); records: what it returns
- ragas: a Ragas evaluation dataset (JSONL or CSV) read as a bundle
- claims: sentence-level claim proposals for answers that come without claims
- uploads: the largest upload accepted

Writing it (services, atomic, all or nothing):
- bundle_import: import_bundle (read the project, plan, check under locks, write);
  bundle_plan: what an import will do (plan_import) and did (ImportResult); bundle_write:
  the bulk writes
- ragas_import: a Ragas dataset into a project, as a bundle
- label_import, label_lines: labels made elsewhere, as submitted label sets
- gold_import: gold made elsewhere, one label per item

And:
- bundle_export: a project's data as a bundle again
- views, forms: the new-project and upload pages (each file is queued for a worker)

Members are imported by annotate.members, judge runs by evaluation.judges.runs; a new project's
rules are annotate.projects.creation.
"""
