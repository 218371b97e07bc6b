"""What every capability of annotate uses; none of it knows about labelling, queues or gold.

- errors: ServiceError (a request the domain refuses) and NotAllowed, raised by every service
- bulk: COPY inserts and after-commit ANALYZE/VACUUM for the importers' large writes
- collector: pausing Python's cyclic garbage collector while a big read or import runs
- lookups: the `__any` and `__among` lookups (a list of keys as one parameter)
- safe_json: strict JSON parsing for uploads and API bodies
- csvsafe: CSV cells a spreadsheet will not run as formulas
- paging: one page of a long table, with links to its neighbours
- computed: computed reports, stored and kept per revision, and the one rule for staleness
  (the apps register their kinds in their report_kinds modules)
- markdown, docs_views: the format docs (docs/*.md) as pages
"""
