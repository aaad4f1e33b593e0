"""Test-side extension of moto 5.2.5 for the S3 Tables operations moto lacks (docs/aws-facts.md#local-stand-ins).

`app.build_app()` wraps moto's own WSGI application. Requests for the S3 Tables operations moto does not
implement
(bucket/table policies, maintenance, encryption, storage class, replication configuration and status,
`DisassociateTableReplication`: newer than botocore 1.44.5, routed through the kit's overlay `jobs.aws_overlay`),
and for the
few it implements incorrectly (`GetTable` by `tableArn`, `ListTables` without `tableARN`, table ARNs built
from the
table name instead of its UUID), are answered here with AWS's shapes, version tokens, validation and error
codes;
everything else goes to moto unchanged. `/_kit_test/*` is a test-only control endpoint (reset, replication
status
hooks, fault injection, bulk seeding); see `control.py` for the client. Nothing here is imported by `jobs/`.
"""
