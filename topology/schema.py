"""The tables the kit creates in a source bucket: `[[source.namespaces]]`, their `[[...tables]]` with columns and
partition transforms, and the snapshot retention a bucket or a table keeps. Imported by `topology/model.py`.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, field_validator

from s3tables_kit.topology.rules import PARTITION_RE, TRANSFORM_CANON, check_column_type, check_iceberg_name


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=False)


class SnapshotRetention(_Frozen):
    """Iceberg snapshot management for a table (S3 Tables `icebergSnapshotManagement`)."""

    max_snapshot_age_hours: int = Field(
        ge=1, description="Hours a snapshot is kept before snapshot management expires it (720 is 30 days)."
    )
    min_snapshots_to_keep: int = Field(default=1, ge=1, description="Snapshots always kept, however old they are.")


class Column(_Frozen):
    name: str = Field(description="Iceberg column name: lower case letters, digits and underscores.")
    type: str = Field(
        description="Iceberg type: boolean, int, long, float, double, date, time, timestamp, timestamptz, string, "
        "uuid, binary or decimal(P,S)."
    )
    required: bool = Field(default=False, description="Whether the column is required (Iceberg's NOT NULL).")
    doc: str | None = Field(default=None, description="Comment stored with the column in the table's schema.")

    _name = field_validator("name")(classmethod(lambda cls, v: check_iceberg_name(v, "column")))
    _type = field_validator("type")(classmethod(lambda cls, v: check_column_type(v)))


@dataclass(frozen=True)
class PartitionField:
    source: str
    transform: str  # identity, year, month, day, hour, bucket[N], truncate[W], void

    @property
    def spark_sql(self) -> str:
        if self.transform == "identity":
            return self.source
        if self.transform.startswith(("bucket[", "truncate[")):
            fn, arg = self.transform[:-1].split("[")
            return f"{fn}({arg}, {self.source})"
        plural = {"year": "years", "month": "months", "day": "days", "hour": "hours"}
        return f"{plural.get(self.transform, self.transform)}({self.source})"


def parse_partition(expr: str) -> PartitionField:
    m = PARTITION_RE.match(expr.strip())
    if not m:
        raise ValueError(
            f"partition {expr!r} is not a transform; use 'column', 'month(column)', 'day(column)', "
            "'bucket(16, column)' or 'truncate(10, column)'"
        )
    if m.group("bare"):
        return PartitionField(m.group("bare"), "identity")
    fn = TRANSFORM_CANON[m.group("fn")]
    arg = m.group("arg")
    if fn in ("bucket", "truncate"):
        if arg is None or int(arg) < 1:
            raise ValueError(f"partition {expr!r}: {fn} needs a positive width, e.g. {fn}(16, column)")
        return PartitionField(m.group("col"), f"{fn}[{int(arg)}]")
    if arg is not None:
        raise ValueError(f"partition {expr!r}: {fn} takes only a column")
    return PartitionField(m.group("col"), fn)


class Table(_Frozen):
    name: str = Field(description="Table name: lower case letters, digits and underscores.")
    columns: tuple[Column, ...] = Field(
        min_length=1,
        description="The table's creation schema, in order (after creation the schema belongs to the table).",
    )
    partition_by: tuple[str, ...] = Field(
        default=(),
        description='Partition transforms: "column" (identity), "year(column)", "month(column)", "day(column)", '
        '"hour(column)", "bucket(16, column)", "truncate(10, column)" or "void(column)".',
    )
    snapshot_retention: SnapshotRetention | None = Field(
        default=None, description="This table's snapshot retention, instead of the source's."
    )

    _name = field_validator("name")(classmethod(lambda cls, v: check_iceberg_name(v, "table")))

    @property
    def partition_fields(self) -> tuple[PartitionField, ...]:
        return tuple(parse_partition(p) for p in self.partition_by)


class Namespace(_Frozen):
    name: str = Field(
        description="Namespace name: lower case letters, digits and underscores, not starting with 'aws'."
    )
    tables: tuple[Table, ...] = Field(
        default=(),
        description="The tables the kit creates in this namespace (in an adopted namespace: existing tables it "
        "imports, for table-level replication).",
    )
    adopt: bool | None = Field(
        default=None,
        description="In an adopted bucket: false when the kit creates this namespace; unset, it is adopted with the "
        "bucket (imported, never created).",
    )

    _name = field_validator("name")(classmethod(lambda cls, v: check_iceberg_name(v, "namespace")))
