"""Storing results: the asv project (project), asv's results files (asv_results: the one
adapter of asv's Results API), foreign formats (importers/) and their stub benchmarks
(external), writing imports into a results tree (store, ingest), combining trees (merge) and
the measured repository's history (gitrepo)."""
