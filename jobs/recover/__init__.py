"""Recovery of writable, verified Iceberg tables from a read-only S3 Tables replica.

Modules: `model` (metadata -> plain data), `planning` (snapshot resolution, target actions), `sql` (statement
text), `catalogs` (Spark catalog configuration per mode), `metadata` (JVM-free metadata readers), `guard`
(read-only replica guard), `verify`, `report`, `job` (execution) and `cli`. The local stand-in for
replication used by the drill and the tests is `harness/localreplica.py`.
"""
