"""The path rewrite of S3 Tables replication, for the sandbox's replicas (`harness/sandbox.py`).

AWS replication rewrites every path of a replica for the destination (docs/aws-facts.md#replication): its metadata,
manifest lists, manifests and data files all live under the replica's own table location. The emulator's replication
hook (`/_kit_test/replicate`) copies the source's metadata document and changes only its `location`, so the replica's
snapshots still name the source's files. Recovery's file copy refuses files outside the table location, as it must,
so the sandbox completes the replication here: every data file is copied under the replica's location, every
manifest and manifest list is rewritten with the new paths (pyiceberg's Avro writers, sequence numbers and snapshot
ids kept), and the replica's current metadata document is rewritten in place to name them.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, Literal

AVRO_CODEC: Literal["deflate"] = "deflate"


def _split(uri: str) -> tuple[str, str]:
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    return bucket, key


class Rewriter:
    """Rewrites one replica table, reading and writing objects with a boto3 S3 client of the emulator."""

    def __init__(self, s3: Any, io: Any, source_location: str, replica_location: str) -> None:
        self.s3 = s3
        self.io = io  # a pyiceberg FileIO that reads the emulator's S3
        self.src = source_location.rstrip("/")
        self.dst = replica_location.rstrip("/")
        self.copied: set[str] = set()
        self.manifests: dict[str, Any] = {}  # source manifest path -> the rewritten ManifestFile
        self.tmp = Path(tempfile.mkdtemp(prefix="kit-sandbox-rewrite-"))

    def moved(self, path: str) -> str:
        return self.dst + path[len(self.src) :] if path.startswith(self.src + "/") else path

    def _get(self, uri: str) -> bytes:
        bucket, key = _split(uri)
        return bytes(self.s3.get_object(Bucket=bucket, Key=key)["Body"].read())

    def _put(self, uri: str, body: bytes) -> None:
        bucket, key = _split(uri)
        self.s3.put_object(Bucket=bucket, Key=key, Body=body)

    def _local_output(self, name: str) -> Any:
        return self.io.new_output(str(self.tmp / name))

    def _upload(self, name: str, uri: str) -> int:
        body = (self.tmp / name).read_bytes()
        self._put(uri, body)
        return len(body)

    def copy_file(self, path: str) -> str:
        new = self.moved(path)
        if new != path and path not in self.copied:
            self._put(new, self._get(path))
            self.copied.add(path)
        return new

    def manifest(self, m: Any, metadata: Any) -> Any:
        from pyiceberg.manifest import write_manifest

        if m.manifest_path in self.manifests:
            return self.manifests[m.manifest_path]
        entries = m.fetch_manifest_entry(self.io, discard_deleted=False)
        for e in entries:
            e.data_file[1] = self.copy_file(e.data_file.file_path)  # position 1: file_path
        name = f"m{len(self.manifests)}.avro"
        spec = metadata.specs()[m.partition_spec_id]
        with write_manifest(
            metadata.format_version, spec, metadata.schema(), self._local_output(name), m.added_snapshot_id, AVRO_CODEC
        ) as writer:
            for e in entries:
                writer.add_entry(e)
        new_path = self.moved(m.manifest_path)
        rewritten = type(m)(*m._data)
        rewritten[0], rewritten[1] = new_path, self._upload(name, new_path)  # manifest_path, manifest_length
        self.manifests[m.manifest_path] = rewritten
        return rewritten

    def manifest_list(self, snapshot: Any, metadata: Any) -> str:
        from pyiceberg.manifest import read_manifest_list, write_manifest_list

        manifests = [self.manifest(m, metadata) for m in read_manifest_list(self.io.new_input(snapshot.manifest_list))]
        name = f"snap-{snapshot.snapshot_id}.avro"
        with write_manifest_list(
            metadata.format_version,
            self._local_output(name),
            snapshot.snapshot_id,
            snapshot.parent_snapshot_id,
            snapshot.sequence_number,
            AVRO_CODEC,
        ) as writer:
            writer.add_manifests(manifests)
        new_path = self.moved(snapshot.manifest_list)
        self._upload(name, new_path)
        return new_path

    def rewrite(self, metadata_location: str) -> int:
        """Rewrite the replica whose current metadata document is at `metadata_location`; the data files copied."""
        from pyiceberg.table.metadata import TableMetadataUtil

        raw = self._get(metadata_location)
        metadata = TableMetadataUtil.parse_raw(raw.decode())
        doc = json.loads(raw)
        lists = {s.snapshot_id: self.manifest_list(s, metadata) for s in metadata.snapshots}
        for snap in doc.get("snapshots", []):
            snap["manifest-list"] = lists[snap["snapshot-id"]]
        for entry in doc.get("metadata-log", []):
            entry["metadata-file"] = self.moved(entry["metadata-file"])
        self._put(metadata_location, json.dumps(doc).encode())
        return len(self.copied)


def rewrite_replicas(endpoint: str, region_of: Any, s3tables_of: Any, pairs: list[tuple[str, str]]) -> int:
    """Rewrite every replica table of the `(source bucket ARN, replica bucket ARN)` pairs whose source table has
    metadata; `s3tables_of(region)` and the S3 client of a Region come from the caller. Returns the files copied."""
    from pyiceberg.io.pyarrow import PyArrowFileIO

    from s3tables_kit.jobs.failover.iceberg import io_props

    copied = 0
    for source_arn, replica_arn in pairs:
        region = region_of(replica_arn)
        src_t, dst_t = s3tables_of("s3tables", region_of(source_arn)), s3tables_of("s3tables", region)
        # The files are read with the replica client's credentials: the stand-in keeps each account's objects apart.
        io = PyArrowFileIO({**io_props(dst_t, replica_arn, endpoint), "s3.force-virtual-addressing": "false"})
        for page in dst_t.get_paginator("list_tables").paginate(tableBucketARN=replica_arn):
            for t in page["tables"]:
                ns, name = t["namespace"][0], t["name"]
                try:
                    src = src_t.get_table_metadata_location(tableBucketARN=source_arn, namespace=ns, name=name)
                except src_t.exceptions.NotFoundException:
                    continue  # a table of another source (a fan-in vault)
                rep = dst_t.get_table_metadata_location(tableBucketARN=replica_arn, namespace=ns, name=name)
                if not rep.get("metadataLocation"):
                    continue
                rewriter = Rewriter(s3tables_of("s3", region), io, src["warehouseLocation"], rep["warehouseLocation"])
                copied += rewriter.rewrite(rep["metadataLocation"])
    return copied
