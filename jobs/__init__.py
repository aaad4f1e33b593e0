"""What runs against a deployed topology: recovery, failover, the ops tools, the monitor (`s3tables_kit.jobs`)."""

# A checkout also reaches this folder by its bare name; the kit gives each module one name.
if __name__ != "s3tables_kit.jobs":
    raise ImportError(f"import s3tables_kit.jobs, not {__name__}: the kit's modules are named s3tables_kit.<package>")
