"""Benchmarks of the kit against what an engineer would do by hand. `python -m bench.run` / `make bench`.

Modules: `report` (figures, goals, ratios, Markdown; pure), `synthscale` (the 5-destination / 1,000-table topology and
its measured synth in a subprocess), `eventlog` (Spark event-log profile; pure parsing), `recovery` (copy,
verification, many tables, planning on local Spark and Iceberg), `run` (orchestration, scales, output files).
"""
