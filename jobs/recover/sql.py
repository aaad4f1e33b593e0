"""Spark SQL text for the recovery (pure string building; every statement is tested without Spark)."""

from __future__ import annotations

import re
from typing import Any

from s3tables_kit.jobs.kernel.idents import Ident
from s3tables_kit.jobs.kernel.snapshots import IcebergColumn, IcebergPartitionField, SortField
from s3tables_kit.jobs.recover.model import (
    LINEAGE,
    PROP_REPLICA_METADATA,
    PROP_REPLICA_TABLE,
    PROP_SNAPSHOT_TIME,
    PROP_SNAPSHOT_TIME_MS,
)
from s3tables_kit.jobs.recover.planning import TablePlan, source_names

# Properties that belong to the service, the catalog or the old table's storage: never copied to the target.
# Location-bearing keys would point the new table into the replica's storage.
MANAGED_PROPERTIES = frozenset(
    {
        "format-version",  # set explicitly
        "owner",
        "provider",
        "location",
        "uuid",
        "current-snapshot-id",
        "current-schema",
        "default-partition-spec",
        "default-sort-order",
        "snapshot-count",
        "identifier-fields",
        "format",
        "write.data.path",
        "write.metadata.path",
        "write.folder-storage.path",
        "write.object-storage.path",
        "write.object-storage.enabled",
        "write.location-provider.impl",
        "write.object-storage.partitioned-paths",
        "write.metadata.previous-versions-max",
        "write.metadata.delete-after-commit.enabled",
        "history.expire.max-snapshot-age-ms",
        "history.expire.min-snapshots-to-keep",
        "history.expire.max-ref-age-ms",
        "gc.enabled",
    }
)
MANAGED_PREFIXES = (LINEAGE.prefix, "s3tables.", "aws.", "glue.", "lakeformation.", "current-snapshot-")


def user_properties(props: dict[str, str]) -> dict[str, str]:
    return {
        k: v for k, v in sorted(props.items()) if k not in MANAGED_PROPERTIES and not k.startswith(MANAGED_PREFIXES)
    }


def q(name: str) -> str:
    """Backtick-quote one identifier part."""
    return "`" + name.replace("`", "``") + "`"


def qpath(dotted: str) -> str:
    return ".".join(q(p) for p in dotted.split("."))


def table_ref(catalog: str, ident: Ident) -> str:
    return f"{q(catalog)}.{q(ident.namespace)}.{q(ident.name)}"


def lit(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


_TRANSFORM = re.compile(r"^(bucket|truncate)\[(\d+)\]$")
_TIME = {"year": "years", "month": "months", "day": "days", "hour": "hours"}


def transform_sql(transform: str, column: str) -> str:
    """An Iceberg transform as a Spark DDL partition/sort expression."""
    return _transform_call(transform, column, "")


def transform_value_sql(transform: str, column: str, fn_catalog: str) -> str:
    """The partition value of a row, for grouping (Iceberg's Spark functions `<catalog>.system.*`)."""
    return _transform_call(transform, column, f"{q(fn_catalog)}.system.")


def _transform_call(transform: str, column: str, fn: str) -> str:
    """The transform applied to the column, its function name prefixed by `fn` (identity: the column itself)."""
    col = qpath(column)
    if transform == "identity":
        return col
    if transform in _TIME:
        return f"{fn}{_TIME[transform]}({col})"
    m = _TRANSFORM.match(transform)
    if m:
        return f"{fn}{m.group(1)}({m.group(2)}, {col})"
    raise ValueError(f"unsupported partition transform {transform!r}")


def partition_clause(spec: tuple[IcebergPartitionField, ...], names: dict[int, str]) -> str:
    if not spec:
        return ""
    return "PARTITIONED BY (" + ", ".join(transform_sql(f.transform, names[f.source_id]) for f in spec) + ")"


def sort_clause(order: tuple[SortField, ...], names: dict[int, str]) -> str:
    parts = []
    for f in order:
        direction = "DESC" if f.direction.lower() == "desc" else "ASC"
        nulls = "NULLS LAST" if f.null_order.lower() == "nulls-last" else "NULLS FIRST"
        parts.append(f"{transform_sql(f.transform, names[f.source_id])} {direction} {nulls}")
    return ", ".join(parts)


def tblproperties(props: dict[str, str]) -> str:
    return "TBLPROPERTIES (" + ", ".join(f"{lit(k)}={lit(v)}" for k, v in props.items()) + ")"


def lineage_properties(plan: TablePlan, run_id: str) -> dict[str, str]:
    s = plan.snapshot
    return {
        LINEAGE.source_table_arn: plan.info.source_table_arn or "unknown (not reported by the replica catalog)",
        PROP_REPLICA_TABLE: str(plan.replica),
        PROP_REPLICA_METADATA: plan.info.metadata_location or "unknown",
        LINEAGE.snapshot_id: str(s.snapshot_id),
        PROP_SNAPSHOT_TIME: s.committed_at,
        PROP_SNAPSHOT_TIME_MS: str(s.timestamp_ms),
        LINEAGE.run_id: run_id,
    }


def target_properties(plan: TablePlan, run_id: str) -> dict[str, str]:
    props = {"format-version": str(plan.info.format_version)}
    props.update(user_properties(plan.source_properties))
    props.update(lineage_properties(plan, run_id))
    return props


def source_select(replica_catalog: str, plan: TablePlan) -> str:
    return f"SELECT * FROM {table_ref(replica_catalog, plan.replica)} VERSION AS OF {plan.snapshot.snapshot_id}"


def ctas(target_catalog: str, replica_catalog: str, plan: TablePlan, run_id: str, replace: bool = False) -> str:
    """Atomic CTAS (staged create) carrying spec + properties; the sort order follows as ALTER (metadata only)."""
    names = source_names(plan.schema)
    verb = "CREATE OR REPLACE TABLE" if replace else "CREATE TABLE"
    parts = [f"{verb} {table_ref(target_catalog, plan.target)}", "USING iceberg"]
    pc = partition_clause(plan.partition_spec, names)
    if pc:
        parts.append(pc)
    parts.append(tblproperties(target_properties(plan, run_id)))
    parts.append("AS " + source_select(replica_catalog, plan))
    return "\n".join(parts)


def write_ordered_by(target_catalog: str, plan: TablePlan) -> str | None:
    if not plan.sort_order:
        return None
    names = source_names(plan.schema)
    return (
        f"ALTER TABLE {table_ref(target_catalog, plan.target)} WRITE ORDERED BY {sort_clause(plan.sort_order, names)}"
    )


# --- explicit DDL, for catalogs without staged create (S3 Tables Iceberg REST endpoint) ---------------------

_PRIMITIVES = {
    "boolean": "boolean",
    "int": "int",
    "long": "bigint",
    "float": "float",
    "double": "double",
    "date": "date",
    "timestamp": "timestamp_ntz",
    "timestamptz": "timestamp",
    "timestamp_ns": "timestamp_ntz",
    "timestamptz_ns": "timestamp",
    "string": "string",
    "uuid": "string",
    "binary": "binary",
}


def spark_type(t: Any) -> str:
    """An Iceberg type (metadata JSON form) as a Spark DDL type."""
    if isinstance(t, str):
        if t in _PRIMITIVES:
            return _PRIMITIVES[t]
        m = re.match(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$", t)
        if m:
            return f"decimal({m.group(1)},{m.group(2)})"
        if re.match(r"^fixed\[\d+\]$", t):
            return "binary"
        raise ValueError(f"Iceberg type {t!r} has no Spark equivalent")
    kind = t.get("type")
    if kind == "struct":
        fields = []
        for f in t["fields"]:
            item = f"{q(f['name'])}: {spark_type(f['type'])}"
            if f.get("required"):
                item += " NOT NULL"
            if f.get("doc"):
                item += f" COMMENT {lit(f['doc'])}"
            fields.append(item)
        return "struct<" + ", ".join(fields) + ">"
    if kind == "list":
        return f"array<{spark_type(t['element'])}>"
    if kind == "map":
        return f"map<{spark_type(t['key'])}, {spark_type(t['value'])}>"
    raise ValueError(f"unknown Iceberg type {t!r}")


def column_ddl(c: IcebergColumn) -> str:
    s = f"{q(c.name)} {spark_type(c.type)}"
    if c.required:
        s += " NOT NULL"
    if c.doc:
        s += f" COMMENT {lit(c.doc)}"
    return s


def create_table(target_catalog: str, plan: TablePlan, run_id: str) -> str:
    names = source_names(plan.schema)
    cols = ",\n  ".join(column_ddl(c) for c in plan.schema)
    parts = [f"CREATE TABLE {table_ref(target_catalog, plan.target)} (\n  {cols}\n)", "USING iceberg"]
    pc = partition_clause(plan.partition_spec, names)
    if pc:
        parts.append(pc)
    parts.append(tblproperties(target_properties(plan, run_id)))
    return "\n".join(parts)


def insert_select(target_catalog: str, replica_catalog: str, plan: TablePlan) -> str:
    return f"INSERT INTO {table_ref(target_catalog, plan.target)} " + source_select(replica_catalog, plan)


def drop_table(catalog: str, ident: Ident, purge: bool = True) -> str:
    return f"DROP TABLE IF EXISTS {table_ref(catalog, ident)}" + (" PURGE" if purge else "")


def set_properties(catalog: str, ident: Ident, props: dict[str, str]) -> str:
    return f"ALTER TABLE {table_ref(catalog, ident)} SET {tblproperties(props)}"


def unset_properties(catalog: str, ident: Ident, keys: list[str]) -> str:
    return (
        f"ALTER TABLE {table_ref(catalog, ident)} UNSET TBLPROPERTIES IF EXISTS ("
        + ", ".join(lit(k) for k in keys)
        + ")"
    )


def create_namespace(catalog: str, namespace: str) -> str:
    return f"CREATE NAMESPACE IF NOT EXISTS {q(catalog)}.{q(namespace)}"


# --- verification -------------------------------------------------------------------------------------------


def _has_map(t: Any) -> bool:
    if isinstance(t, str):
        return False
    if t.get("type") == "map":
        return True
    if t.get("type") == "struct":
        return any(_has_map(f["type"]) for f in t["fields"])
    if t.get("type") == "list":
        return _has_map(t["element"])
    return False


def comparable_expr(c: IcebergColumn) -> str:
    """A hash- and set-operation-friendly form of a column (Spark refuses to hash or compare maps)."""
    col = q(c.name)
    if isinstance(c.type, dict) and c.type.get("type") == "map":
        if _has_map(c.type["value"]) or _has_map(c.type["key"]):
            return f"to_json({col})"
        return f"array_sort(map_entries({col}))"
    if _has_map(c.type):
        return f"to_json({col})"
    return col


def fingerprint_sql(
    relation: str, schema: tuple[IcebergColumn, ...], spec: tuple[IcebergPartitionField, ...], fn_catalog: str
) -> str:
    """One pass: per partition value, row count and two order-independent sums of row hashes.

    The 64-bit xxhash64 is summed as its high and low 32-bit halves in bigint columns (`verify` recombines them
    exactly: sum = hi * 2^32 + lo), which is exact up to 2^31 rows per partition and much cheaper than decimal
    arithmetic (BENCHMARKS.md). Addition is commutative, so the sums are equal exactly when the multisets of rows are
    equal, up to hash collisions (xxhash64 and the independent 32-bit Murmur3 `hash`).
    """
    names = source_names(schema)
    cols = ", ".join(comparable_expr(c) for c in schema)
    keys = [transform_value_sql(f.transform, names[f.source_id], fn_catalog) for f in spec]
    key_cols = [f"{k} AS `p{i}`" for i, k in enumerate(keys)]
    select = ", ".join(
        [
            *key_cols,
            "count(*) AS `n`",
            f"sum(shiftright(xxhash64({cols}), 32)) AS `h64hi`",
            f"sum(xxhash64({cols}) & 4294967295) AS `h64lo`",
            f"sum(CAST(hash({cols}) AS BIGINT)) AS `h32`",
        ]
    )
    sql = f"SELECT {select} FROM {relation}"
    if keys:
        sql += " GROUP BY " + ", ".join(keys)
    return sql


def except_all_sql(left: str, right: str, schema: tuple[IcebergColumn, ...], limit: int) -> str:
    cols = ", ".join(f"{comparable_expr(c)} AS {q(c.name)}" for c in schema)
    return f"SELECT {cols} FROM {left} EXCEPT ALL SELECT {cols} FROM {right} LIMIT {limit}"
