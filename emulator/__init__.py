"""The kit's local AWS stand-in: moto 5.2.5 plus an extension for the S3 Tables operations moto lacks.

`app.build_app()` wraps moto's own WSGI application. Requests for the S3 Tables operations moto does not implement
(bucket/table policies, maintenance, encryption, storage class, replication configuration and status,
`DisassociateTableReplication`, `PutRows` with the service's deferred commit and `GetChannel`), and for the few it
implements incorrectly (`GetTable` by `tableArn`, `ListTables` without `tableARN`, table ARNs built from the table
name instead of its UUID), are answered here with AWS's shapes, version tokens, validation and error codes;
everything else goes to moto unchanged. `/_kit_test/*` is a control endpoint for tests, drills and benchmarks (reset,
replication status hooks, fault injection, latency, bulk seeding, account and organization seeding, the PutRows
service's settings and flush); `control.Control` is its client and `process.Emulator` starts and stops the server.
Nothing in `jobs/` depends on it except the local drills, which start it.
"""
