"""Every IAM document of a topology, built, rendered for review and proven (`s3tables_kit.policies`)."""

# A checkout also reaches this folder by its bare name; the kit gives each module one name.
if __name__ != "s3tables_kit.policies":
    raise ImportError(
        f"import s3tables_kit.policies, not {__name__}: the kit's modules are named s3tables_kit.<package>"
    )
