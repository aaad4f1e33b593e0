"""A SQL runner that refuses every statement writing to a protected (replica) catalog.

Every statement the kit runs goes through `GuardedSql.sql`. It is parsed with Spark's own parser (the session's,
so Iceberg's extensions such as CALL and WRITE ORDERED BY are understood); a statement that is not a pure query and
whose target is in a protected catalog raises `ReadOnlyReplicaError` before anything runs. This is the kit's
defence in depth: on AWS the replica is read-only in the service and protected by policies as well.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession


class ReadOnlyReplicaError(PermissionError):
    pass


# Parsed plans that change state but are not `Command`s in Spark 3.5.
_WRITE_STATEMENTS = {"InsertIntoStatement", "CallStatement"}
_FIRST_IDENT = re.compile(
    r"(?:UnresolvedRelation|UnresolvedIdentifier|UnresolvedTableOrView|UnresolvedTable|UnresolvedNamespace"
    r"|CallStatement) \[([^\],]+)"
)


def write_target_catalog(plan_string: str, plan_class: str) -> str | None:
    """The catalog named by the first identifier of a parsed write plan (its target), lower-cased."""
    if plan_class == "SetWriteDistributionAndOrdering":
        m = re.match(r"\S+\s+([^\s.]+)\.", plan_string.lstrip("'"))
        return m.group(1).strip("`").lower() if m else None
    m = _FIRST_IDENT.search(plan_string)
    return m.group(1).strip().strip("`").lower() if m else None


class GuardedSql:
    def __init__(self, spark: SparkSession, protected: Iterable[str]) -> None:
        self.spark = spark
        self.protected = {p.lower() for p in protected}
        jvm: Any = spark._jvm
        assert jvm is not None, "the SparkSession has no JVM gateway"
        self._command = jvm.java.lang.Class.forName("org.apache.spark.sql.catalyst.plans.logical.Command")
        self._parser = spark._jsparkSession.sessionState().sqlParser()
        current = spark.catalog.currentCatalog().lower()
        if current in self.protected:
            raise ReadOnlyReplicaError(f"the session's current catalog {current!r} is a read-only replica")

    def check(self, text: str) -> None:
        plan = self._parser.parsePlan(text)
        cls = plan.getClass().getSimpleName()
        is_write = bool(self._command.isInstance(plan)) or cls in _WRITE_STATEMENTS
        if not is_write:
            return
        plan_string = str(plan.toString())
        if cls == "SetCatalogAndNamespace":
            target = write_target_catalog(plan_string, cls)
            if target in self.protected:
                raise ReadOnlyReplicaError(f"refusing `USE {target}`: the replica catalog is read-only")
            return
        target = write_target_catalog(plan_string, cls)
        if target in self.protected:
            raise ReadOnlyReplicaError(
                f"refusing {cls} on catalog {target!r}: it is a read-only replica (statement: {text.strip()[:120]})"
            )
        if cls == "CallStatement":
            for cat in self.protected:
                if re.search(rf"[\s(,]['\"`]?{re.escape(cat)}\.", plan_string.lower()):
                    raise ReadOnlyReplicaError(f"refusing a procedure call that names the replica catalog {cat!r}")

    def sql(self, text: str) -> DataFrame:
        self.check(text)
        return self.spark.sql(text)
