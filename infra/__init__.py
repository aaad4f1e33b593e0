"""Provisioning: the CDKTF stacks of a topology (`s3tables_kit.infra`)."""

# A checkout also reaches this folder by its bare name; the kit gives each module one name.
if __name__ != "s3tables_kit.infra":
    raise ImportError(f"import s3tables_kit.infra, not {__name__}: the kit's modules are named s3tables_kit.<package>")
