"""The kit's shared language: the typed topology (`s3tables_kit.topology.config`, with its `[assurance]` section in
`s3tables_kit.topology.assurance`) and the outputs contract of a deployed topology (`s3tables_kit.topology.outputs`).

Every other package reads it (`infra/` provisions it, `policies/` derives documents from it, `jobs/` operates on it)
and it imports none of them. No CDKTF, boto3 or Spark code: pydantic and the standard library only.
"""

# A checkout also reaches this folder by its bare name; the kit gives each module one name.
if __name__ != "s3tables_kit.topology":
    raise ImportError(
        f"import s3tables_kit.topology, not {__name__}: the kit's modules are named s3tables_kit.<package>"
    )
