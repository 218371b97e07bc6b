"""Gold releases: a project's gold frozen under a name (v1, 2026-12-07 ...) to cite, download
again byte for byte and compare later, whatever the labels become afterwards.

- services: making a release (create_release: the one place, for the page, the API, the
  command and the worker's job; a "release made" event hooks there), its name's rules
- selectors: a project's releases, a release's rows and its downloads (JSONL as frozen, CSV
  and Parquet derived from it)
- card: the dataset card (Hugging Face README.md): rows by source, agreement with intervals,
  the label schema
- folder: the release as a Hugging Face dataset folder (Parquet per item and judge split,
  README.md), and pushing it to the Hub
- diff: two releases compared, row by row and field by field (diff_gold)
- views, forms: the releases section of the Gold page, making one, downloading one
"""
