"""The jobs' shared kernel: what every job (ops tools, failover, recovery, rehearsal, EMR submission) builds on.

* `sdk`: sessions and clients of the stock boto3, the one retry policy (botocore's attempts + `call`'s outer
  throttling backoff), error codes, pagination, ARNs;
* `clients`: the cached, thread-safe client factory per (service, Region, account), endpoint and role handling;
* `concurrency`: bounded thread pools, worker processes, progress;
* `tables`: `TableRef`/`list_tables` and "GetTable, then read the metadata file" once;
* `idents`: `Ident` (`namespace.name`) and `JobError`, the base of every error whose message is the whole story;
* `snapshots`: Iceberg metadata parsed into `TableInfo` and `Snapshot` (pure);
* `selectors`: which snapshot a run takes (`Selector`: latest, `--as-of`, `--snapshot-id`) and the selection options;
* `commits`: a table's commit times and how far a replica lags them;
* `render`, `options`: the tools' report output (text tables, durations, JSON) and their shared command-line options;
* `leases`: at most one live run per thing it changes (heartbeat, expiry, takeover);
* `killpoints`: the named points the kill tests stop a job at (`KIT_KILL_AT`).

It imports nothing of `jobs` but itself and `s3tables_kit.jobs.aws_timestamps` (tests/test_layers.py).
"""
