"""The jobs' shared kernel: what every job (ops tools, failover, recovery, rehearsal, EMR submission) builds on.

* `sdk`: sessions and clients of the stock boto3, the one retry policy (botocore's attempts + `call`'s outer
  throttling backoff), error codes, pagination, ARNs;
* `clients`: the cached, thread-safe client factory per (service, Region, account), endpoint and role handling;
* `concurrency`: bounded thread pools, worker processes, progress;
* `tables`: `TableRef`/`list_tables` and "GetTable, then read the metadata file" once.

It imports nothing of `jobs` but itself and `jobs.aws_timestamps` (tests/test_layers.py).
"""
