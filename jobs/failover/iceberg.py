"""Metadata-only Iceberg commits on S3 Tables without Spark: pyiceberg's table API over the S3 Tables control plane.

pyiceberg 0.12 has no S3 Tables catalog, so `S3TablesCommitter` is the smallest one that its `Table` needs to commit:
`commit_table` applies pyiceberg's own requirements and updates (`update_table_metadata`, the same code its metastore
catalogs run), writes the new metadata file next to the table's others, and swaps it in with
`UpdateTableMetadataLocation` guarded by the table's version token (a concurrent commit fails with
`CommitFailedException`; the caller reloads and retries). Everything Iceberg-specific — `manage_snapshots()
.set_current_snapshot`, `transaction().set_properties`, `inspect.partitions` — is pyiceberg's.
Used for the point in time (set the current snapshot), the verification commit (kit.failover.* properties) and the
per-partition record counts (manifests only). When pyiceberg ships an S3 Tables catalog, this module goes.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import ClientError

from s3tables_kit.jobs.iceberg_io import shared_s3_file_io
from s3tables_kit.jobs.kernel.idents import Ident
from s3tables_kit.jobs.kernel.sdk import BucketRef, call, error_code
from s3tables_kit.jobs.kernel.tables import metadata_location

if TYPE_CHECKING:  # pragma: no cover
    from pyiceberg.table import CommitTableResponse, Table
    from pyiceberg.table.metadata import TableMetadata


class S3TablesCommitter:
    """Duck-typed pyiceberg catalog for one table bucket: load, commit (and create, for the drill and tests)."""

    def __init__(self, s3tables: Any, bucket_arn: str, io_props: dict[str, str]) -> None:
        self.client = s3tables
        self.bucket_arn = bucket_arn
        self.io_props = io_props
        self._tokens: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()
        self._io: Any = None

    def file_io(self, location: str) -> Any:
        """One FileIO for the committer, with one S3 filesystem for all the bucket's tables (`shared_s3_file_io`)."""
        with self._lock:
            if self._io is None:
                self._io = shared_s3_file_io(self.io_props)
            return self._io

    # -- pyiceberg's Catalog surface used by Table -----------------------------------------------------------

    def load(self, ident: Ident, known: tuple[str, bytes] | None = None) -> Table:
        """The table as it is now. `known` = (metadata location, that file's bytes) already read by the caller: used
        instead of reading the file again when the table still points at that location (a metadata file is never
        rewritten: its name is unique), so only the version token is fetched."""
        from pyiceberg.table import Table
        from pyiceberg.table.metadata import TableMetadataUtil

        r = call(
            self.client.get_table_metadata_location,
            tableBucketARN=self.bucket_arn,
            namespace=ident.namespace,
            name=ident.name,
        )
        loc = metadata_location(r)
        if not loc:
            raise ValueError(f"{ident}: the table has no metadata yet")
        with self._lock:
            self._tokens[(ident.namespace, ident.name)] = r["versionToken"]
        io = self.file_io(loc)
        if known is not None and known[0] == loc:
            raw = known[1]
        else:
            with io.new_input(loc).open() as f:  # seekable read: moto's non-seekable stream comes back empty
                raw = f.read()
        metadata = TableMetadataUtil.parse_raw(raw.decode())
        return Table((ident.namespace, ident.name), metadata, loc, io, cast(Any, self))

    def commit_table(
        self, table: Table, requirements: tuple[Any, ...], updates: tuple[Any, ...]
    ) -> CommitTableResponse:
        from pyiceberg.exceptions import CommitFailedException
        from pyiceberg.serializers import ToOutputFile
        from pyiceberg.table import CommitTableResponse
        from pyiceberg.table.locations import load_location_provider
        from pyiceberg.table.update import update_table_metadata

        ns, name = table.name()[0], table.name()[-1]
        for req in requirements:
            req.validate(table.metadata)
        new: TableMetadata = update_table_metadata(
            base_metadata=table.metadata, updates=updates, metadata_location=table.metadata_location
        )
        version = _metadata_version(table.metadata_location) + 1
        location = load_location_provider(new.location, new.properties).new_table_metadata_file_location(version)
        ToOutputFile.table_metadata(new, table.io.new_output(location), overwrite=True)  # uuid name; no ListObjects
        with self._lock:
            token = self._tokens.get((ns, name))
        try:
            r = call(
                self.client.update_table_metadata_location,
                tableBucketARN=self.bucket_arn,
                namespace=ns,
                name=name,
                versionToken=token,
                metadataLocation=location,
            )
        except ClientError as exc:
            if error_code(exc) == "ConflictException":
                raise CommitFailedException(f"{ns}.{name}: concurrent commit ({exc})") from exc
            raise
        with self._lock:
            self._tokens[(ns, name)] = r["versionToken"]
        return CommitTableResponse(metadata=new, **{"metadata-location": location})

    def _delete_old_metadata(self, *args: Any) -> None:  # pyiceberg calls it after a commit; S3 Tables keeps them
        return None

    # -- creation (drill, tests, benchmarks: what a writer engine does) ---------------------------------------

    def create(
        self, ident: Ident, schema: Any, partition_spec: Any = None, properties: dict[str, str] | None = None
    ) -> Table:
        from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
        from pyiceberg.serializers import ToOutputFile
        from pyiceberg.table import Table
        from pyiceberg.table.metadata import new_table_metadata
        from pyiceberg.table.sorting import UNSORTED_SORT_ORDER

        try:
            call(self.client.create_namespace, tableBucketARN=self.bucket_arn, namespace=[ident.namespace])
        except ClientError as exc:
            if error_code(exc) != "ConflictException":
                raise
        try:  # the table may exist without metadata yet (created by Terraform)
            call(
                self.client.create_table,
                tableBucketARN=self.bucket_arn,
                namespace=ident.namespace,
                name=ident.name,
                format="ICEBERG",
            )
        except ClientError as exc:
            if error_code(exc) != "ConflictException":
                raise
        r = call(
            self.client.get_table_metadata_location,
            tableBucketARN=self.bucket_arn,
            namespace=ident.namespace,
            name=ident.name,
        )
        warehouse = r["warehouseLocation"]
        metadata = new_table_metadata(
            schema, partition_spec or UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, warehouse, properties or {}
        )
        location = f"{warehouse}/metadata/00000-{metadata.table_uuid}.metadata.json"
        io = self.file_io(location)
        ToOutputFile.table_metadata(metadata, io.new_output(location), overwrite=True)
        u = call(
            self.client.update_table_metadata_location,
            tableBucketARN=self.bucket_arn,
            namespace=ident.namespace,
            name=ident.name,
            versionToken=r["versionToken"],
            metadataLocation=location,
        )
        with self._lock:
            self._tokens[(ident.namespace, ident.name)] = u["versionToken"]
        return Table((ident.namespace, ident.name), metadata, location, io, cast(Any, self))


def _metadata_version(location: str) -> int:
    head = location.rsplit("/", 1)[-1].split("-", 1)[0]
    return int(head) if head.isdigit() else -1


def io_props(client: Any, bucket_arn: str, endpoint: str | None) -> dict[str, str]:
    """pyiceberg FileIO properties for the table storage behind `bucket_arn`, with the credentials of `client` (the
    same identity as the control-plane calls, e.g. the break-glass role)."""
    props = {"s3.region": BucketRef(bucket_arn).region}
    if endpoint:
        props["s3.endpoint"] = endpoint
    creds = client._request_signer._credentials  # botocore keeps the client's resolved credentials here
    if creds is not None:
        frozen = creds.get_frozen_credentials()
        props["s3.access-key-id"] = frozen.access_key
        props["s3.secret-access-key"] = frozen.secret_key
        if frozen.token:
            props["s3.session-token"] = frozen.token
    return props


def commit_with_retry(
    committer: S3TablesCommitter,
    ident: Ident,
    change: Any,
    attempts: int = 5,
    table: Table | None = None,
    known: tuple[str, bytes] | None = None,
) -> Table:
    """Apply `change(table)` (which commits) to `table` (loaded if not given, with `known` metadata for the first
    load), reload and retry on a concurrent commit; returns the committed table."""
    from pyiceberg.exceptions import CommitFailedException

    for attempt in range(attempts):
        if table is None or attempt > 0:
            table = committer.load(ident, known=known if attempt == 0 else None)
        try:
            change(table)
            return table  # pyiceberg refreshes the table's metadata from the commit response
        except CommitFailedException:
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


def set_current_snapshot(
    committer: S3TablesCommitter, ident: Ident, snapshot_id: int, known: tuple[str, bytes] | None = None
) -> Table:
    """Iceberg's set_current_snapshot (metadata only): the table's main branch points at `snapshot_id`."""

    def change(t: Table) -> None:
        if t.metadata.current_snapshot_id != snapshot_id:
            t.manage_snapshots().set_current_snapshot(snapshot_id=snapshot_id).commit()

    return commit_with_retry(committer, ident, change, known=known)


def set_properties(
    committer: S3TablesCommitter, ident: Ident, props: dict[str, str], table: Table | None = None
) -> Table:
    def change(t: Table) -> None:
        with t.transaction() as tx:
            tx.set_properties(props)

    return commit_with_retry(committer, ident, change, table=table)


def partition_counts(table: Table, snapshot_id: int | None) -> dict[str, int]:
    """Live record count per partition at a snapshot, from its manifests (no data file is read).

    The grouping of pyiceberg's `inspect.partitions` (per partition tuple of each entry's own spec, delete-only
    partitions included with 0 records, data files' `record_count` only) without building its Arrow table and with
    one read of the manifest list (it reads it twice): pyiceberg's manifest readers over the snapshot's manifests."""
    from pyiceberg.manifest import DataFileContent

    if snapshot_id is None:
        return {}
    snapshot = table.metadata.snapshot_by_id(snapshot_id)
    if snapshot is None:
        raise ValueError(f"snapshot {snapshot_id} is not in the table's metadata")
    specs = table.metadata.specs()
    out: dict[str, int] = {}
    for manifest in snapshot.manifests(table.io):
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
            f = entry.data_file
            fields = specs[f.spec_id].fields
            key = repr(sorted((field.name, f.partition[pos]) for pos, field in enumerate(fields))) if fields else "()"
            out[key] = out.get(key, 0) + (f.record_count if f.content == DataFileContent.DATA else 0)
    return out
