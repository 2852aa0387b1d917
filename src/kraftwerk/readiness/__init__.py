"""The fleet upgrade-readiness report: what stands between each cluster and a target metadata.version.

Public API: :func:`~kraftwerk.readiness.assess.assess_cluster` (one cluster, from the record rows of
one copy of its metadata log), :func:`~kraftwerk.readiness.fleet.assess_local` (a fleet in one
process), :func:`~kraftwerk.readiness.fleet.fleet_document` (the summary of a run),
:func:`~kraftwerk.readiness.tables.write_tables` (its Parquet tables). Spark runs the same row
functions per cluster (:mod:`kraftwerk.spark.readiness`); the page people read is the CLI's
(:mod:`kraftwerk.cli.readiness_page`).
"""
