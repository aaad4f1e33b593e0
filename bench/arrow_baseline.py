"""Baseline (c) of the recovery benchmark: the same table copied with pyiceberg + Arrow, no JVM (read the snapshot
as Arrow, write a new table through a minimal in-memory pyiceberg catalog)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any


def dict_catalog(name: str, warehouse: str) -> Any:
    """A minimal pyiceberg catalog that keeps table pointers in memory (metadata and data files are real, written by
    pyiceberg's own MetastoreCatalog code). The SQL catalog would need SQLAlchemy, which the kit does not install."""
    from pyiceberg.catalog import MetastoreCatalog
    from pyiceberg.exceptions import NoSuchTableError
    from pyiceberg.serializers import FromInputFile
    from pyiceberg.table import CommitTableResponse, Table

    class DictCatalog(MetastoreCatalog):
        def __init__(self) -> None:
            super().__init__(name, warehouse=warehouse)
            self.pointers: dict[tuple[str, ...], str] = {}

        def _key(self, identifier: Any) -> tuple[str, ...]:
            return tuple(identifier.split(".")) if isinstance(identifier, str) else tuple(identifier)

        def create_table(self, identifier: Any, schema: Any, location: Any = None, partition_spec: Any = None,
                         sort_order: Any = None, properties: Any = None) -> Table:  # fmt: skip
            from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
            from pyiceberg.table.sorting import UNSORTED_SORT_ORDER

            staged = self._create_staged_table(
                identifier,
                schema,
                location,
                partition_spec or UNPARTITIONED_PARTITION_SPEC,
                sort_order or UNSORTED_SORT_ORDER,
                properties or {},
            )
            self._write_metadata(staged.metadata, staged.io, staged.metadata_location)
            self.pointers[self._key(identifier)] = staged.metadata_location
            return self.load_table(identifier)

        def load_table(self, identifier: Any) -> Table:
            key = self._key(identifier)
            if key not in self.pointers:
                raise NoSuchTableError(".".join(key))
            loc = self.pointers[key]
            fio = self._load_file_io(location=loc)
            return Table(key, FromInputFile.table_metadata(fio.new_input(loc)), loc, fio, self)

        def commit_table(self, table: Table, requirements: Any, updates: Any) -> CommitTableResponse:
            current = self.load_table(table.name())
            staged = self._update_and_stage_table(current, table.name(), requirements, updates)
            self._write_metadata(staged.metadata, staged.io, staged.metadata_location)
            self.pointers[self._key(table.name())] = staged.metadata_location
            return CommitTableResponse(metadata=staged.metadata, metadata_location=staged.metadata_location)  # type: ignore[call-arg]

        def _no(self, *a: Any, **k: Any) -> Any:
            raise NotImplementedError

        create_namespace = drop_namespace = drop_table = drop_view = list_namespaces = list_tables = _no
        list_views = load_namespace_properties = load_view = register_table = register_view = _no
        rename_table = update_namespace_properties = view_exists = _no

    DictCatalog.__abstractmethods__ = frozenset()
    return DictCatalog()


def month_transform_shim() -> bool:
    """pyiceberg writes a `month` partition with the optional Rust package `pyiceberg-core`, which the kit does not
    install. Without it, give `MonthTransform` the same computation in pyarrow.compute (months since 1970-01) so the
    Arrow copy keeps the table's layout. Returns True when the shim was installed."""
    try:
        import pyiceberg_core  # noqa: F401

        return False
    except ImportError:
        pass
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyiceberg.transforms import MonthTransform

    def pyarrow_transform(self: Any, source: Any) -> Any:
        def months(arr: Any) -> Any:
            y, m = pc.year(arr), pc.month(arr)
            return pc.add(pc.multiply(pc.subtract(y, 1970), 12), pc.subtract(m, 1)).cast(pa.int32())

        return months

    MonthTransform.pyarrow_transform = pyarrow_transform  # type: ignore[method-assign]
    return True


def pyiceberg_copy(metadata_location: str, snapshot_id: int, warehouse: Path) -> dict[str, Any]:
    from pyiceberg.table import StaticTable

    shim = month_transform_shim()

    t0 = time.perf_counter()
    src = StaticTable.from_metadata(metadata_location)
    arrow = src.scan(snapshot_id=snapshot_id).to_arrow()
    t1 = time.perf_counter()
    cat = dict_catalog("bench", "file://" + str(warehouse))
    tbl = cat.create_table(
        "bench.orders_arrow",
        schema=src.schema(),
        location="file://" + str(warehouse / "bench" / "orders_arrow"),
        partition_spec=src.spec(),
        properties={"format-version": "2"},
    )
    tbl.append(arrow)
    t2 = time.perf_counter()
    snap = tbl.current_snapshot()
    rows = int(snap.summary["total-records"]) if snap and snap.summary else arrow.num_rows
    files = len(list(tbl.scan().plan_files()))
    return {
        "read_s": t1 - t0,
        "write_s": t2 - t1,
        "rows": rows,
        "arrow_mb": arrow.nbytes / 1e6,
        "files": files,
        "month_transform": "pyarrow.compute shim (pyiceberg-core not installed)" if shim else "pyiceberg-core",
    }
