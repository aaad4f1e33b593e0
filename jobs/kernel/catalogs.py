"""Spark catalog configuration of a table bucket, per access mode (pure): the replica or vault source read, the
recovery target written; shared by recovery, the backup and the rehearsal.

Modes (docs/aws-facts.md#spark-and-iceberg):
  client  S3 Tables client catalog jar (`S3TablesCatalog`), the default on AWS; staged (atomic) CTAS.
  rest    S3 Tables Iceberg REST endpoint with SigV4; NO staged create: the job creates, then inserts, and drops the
          half-made target on failure.
  glue    Glue Data Catalog federation `s3tablescatalog/<bucket>`; staged CTAS.
  hadoop  local Hadoop catalog (`file:/abs/path` warehouse) for the drill and the tests; staged CTAS.
  jdbc    local JDBC catalog (e.g. `jdbc:sqlite:` or `jdbc:derby:`; the driver must be on the classpath).

Glue usage: the account must have the S3 Tables integration with AWS analytics services enabled (it creates the
`s3tablescatalog` federated catalog) and the recovery role needs Lake Formation / Glue permissions on
`<account>:s3tablescatalog/<bucket>`; then `--catalog-mode glue` works like `client`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

MODES = ("client", "rest", "glue", "hadoop", "jdbc")
SPARK_CATALOG = "org.apache.iceberg.spark.SparkCatalog"
S3TABLES_CATALOG_IMPL = "software.amazon.s3tables.iceberg.S3TablesCatalog"
GLUE_CATALOG_IMPL = "org.apache.iceberg.aws.glue.GlueCatalog"
S3_FILE_IO = "org.apache.iceberg.aws.s3.S3FileIO"


def file_uri(path: Path) -> str:
    """`file:/abs` (one slash): the form a Hadoop catalog uses for its table locations
    (docs/aws-facts.md#spark-and-iceberg)."""
    return "file:" + str(path.resolve())


@dataclass(frozen=True)
class CatalogSpec:
    """One Iceberg catalog: `warehouse` is a table bucket ARN (AWS modes) or a warehouse URI (local modes)."""

    name: str
    mode: str
    warehouse: str
    region: str | None = None
    uri: str | None = None  # jdbc URI, or an override of the REST endpoint
    endpoint: str | None = None  # S3 / S3 Tables endpoint override (moto, VPC endpoints)
    extra: dict[str, str] = field(default_factory=dict, hash=False)
    stage_create: bool | None = None  # None: decided by the mode; False forces create + insert (tests of that path)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"catalog mode {self.mode!r}: expected one of {', '.join(MODES)}")
        if self.mode == "hadoop" and self.warehouse.startswith("file://"):
            # `file:///abs` makes table locations and file paths disagree on the prefix
            # (docs/aws-facts.md#spark-and-iceberg).
            object.__setattr__(self, "warehouse", "file:" + self.warehouse[len("file://") :].replace("//", "/"))
        if self.mode == "hadoop" and self.warehouse.startswith("/"):
            object.__setattr__(self, "warehouse", "file:" + self.warehouse)

    @property
    def staged_ctas(self) -> bool:
        """Whether CREATE TABLE AS SELECT is atomic (staged create) in this catalog."""
        return self.mode != "rest" if self.stage_create is None else self.stage_create

    @property
    def is_aws(self) -> bool:
        return self.mode in ("client", "rest", "glue")

    @property
    def bucket_name(self) -> str:
        return self.warehouse.rsplit("/", 1)[-1]

    @property
    def account_id(self) -> str:
        parts = self.warehouse.split(":")
        return parts[4] if len(parts) > 5 else ""


def catalog_conf(spec: CatalogSpec) -> dict[str, str]:
    p = f"spark.sql.catalog.{spec.name}"
    conf: dict[str, str] = {p: SPARK_CATALOG}
    if spec.mode == "client":
        conf[f"{p}.catalog-impl"] = S3TABLES_CATALOG_IMPL
        conf[f"{p}.warehouse"] = spec.warehouse
    elif spec.mode == "rest":
        if not spec.region:
            raise ValueError(f"catalog {spec.name}: the REST endpoint needs a region")
        conf[f"{p}.type"] = "rest"
        conf[f"{p}.uri"] = spec.uri or f"https://s3tables.{spec.region}.amazonaws.com/iceberg"
        conf[f"{p}.warehouse"] = spec.warehouse
        conf[f"{p}.rest.sigv4-enabled"] = "true"
        conf[f"{p}.rest.signing-name"] = "s3tables"
        conf[f"{p}.rest.signing-region"] = spec.region
    elif spec.mode == "glue":
        conf[f"{p}.catalog-impl"] = GLUE_CATALOG_IMPL
        conf[f"{p}.glue.id"] = f"{spec.account_id}:s3tablescatalog/{spec.bucket_name}"
        conf[f"{p}.glue.account-id"] = spec.account_id
        conf[f"{p}.warehouse"] = f"s3://{spec.bucket_name}/"  # unused for S3 Tables, but required by GlueCatalog
    elif spec.mode == "hadoop":
        conf[f"{p}.type"] = "hadoop"
        conf[f"{p}.warehouse"] = spec.warehouse
    elif spec.mode == "jdbc":
        if not spec.uri:
            raise ValueError(f"catalog {spec.name}: jdbc needs a uri")
        conf[f"{p}.type"] = "jdbc"
        conf[f"{p}.uri"] = spec.uri
        conf[f"{p}.warehouse"] = spec.warehouse
        conf[f"{p}.jdbc.schema-version"] = "V1"
    if spec.is_aws:
        conf[f"{p}.io-impl"] = S3_FILE_IO
        if spec.region:
            conf[f"{p}.client.region"] = spec.region
    if spec.endpoint:
        conf[f"{p}.s3.endpoint"] = spec.endpoint
        conf[f"{p}.s3.path-style-access"] = "true"
        if spec.mode == "client":
            conf[f"{p}.s3tables.endpoint"] = spec.endpoint
    # The target keeps the snapshot's nullability (REQUIRED columns stay required) instead of Spark's default of
    # making every CTAS column nullable.
    conf[f"{p}.use-nullable-query-schema"] = "false"
    conf[f"{p}.cache-enabled"] = "false"
    for k, v in spec.extra.items():
        conf[f"{p}.{k}"] = v
    return conf


def specs_from_outputs(
    outputs: object, mode: str, replica_name: str = "replica", target_name: str = "recovery"
) -> tuple[CatalogSpec, CatalogSpec]:
    """(replica, target) catalog specs from a `s3tables_kit.topology.outputs.KitOutputs`."""
    from s3tables_kit.topology.outputs import KitOutputs

    assert isinstance(outputs, KitOutputs)
    rep = outputs.recovery_replica
    rec = outputs.recovery
    return (
        CatalogSpec(replica_name, mode, rep.table_bucket_arn, region=rep.region),
        CatalogSpec(target_name, mode, rec.table_bucket_arn, region=rec.region),
    )
