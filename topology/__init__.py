"""The kit's shared language: the typed topology (`topology.config`, with its `[assurance]` section in
`topology.assurance`) and the outputs contract of a deployed topology (`topology.outputs`).

Every other package reads it (`infra/` provisions it, `policies/` derives documents from it, `jobs/` operates on it)
and it imports none of them. No CDKTF, boto3 or Spark code: pydantic and the standard library only.
"""
