"""Pure parts of the batched many-table recovery: which tables take it, counts from the files already
read, a batch-wide duration shared by bytes."""

from __future__ import annotations

import dataclasses

from s3tables_kit.jobs.kernel.catalogs import CatalogSpec
from s3tables_kit.jobs.kernel.idents import Ident
from s3tables_kit.jobs.recover.batch import batchable, share, source_counts
from s3tables_kit.jobs.recover.fastpath import SourceFile
from s3tables_kit.jobs.recover.job import RecoveryRequest
from s3tables_kit.jobs.recover.modes import CopyMode, ModeDecision
from s3tables_kit.jobs.recover.planning import Action
from tests.test_recover_filecopy_unit import plan


def _req(**kw: object) -> RecoveryRequest:
    return RecoveryRequest(
        CatalogSpec("r", "hadoop", "/tmp/r"), CatalogSpec("t", "hadoop", "/tmp/t"), tables=[Ident("a", "b")], **kw
    )  # type: ignore[arg-type]


def test_only_plain_new_file_copies_are_batched() -> None:
    tp = plan(CopyMode.AUTO, None)
    files = dataclasses.replace(tp, mode=ModeDecision(CopyMode.FILES, "provable", (0,), 0), action=Action.CREATE)
    assert batchable(_req(), files)
    assert batchable(_req(), dataclasses.replace(files, action=Action.REDO))
    assert not batchable(_req(), dataclasses.replace(files, action=Action.REPLACE))  # --replace: per-table path
    assert not batchable(_req(verify="full"), files)
    assert not batchable(_req(), dataclasses.replace(files, mode=ModeDecision(CopyMode.CTAS, "x")))
    # a snapshot without data files takes the per-table path (verified empty table); unknown counts stay
    snap = files.snapshot
    empty = dataclasses.replace(snap, summary={**snap.summary, "total-data-files": "0"})
    assert not batchable(_req(), dataclasses.replace(files, snapshot=empty))
    unknown = dataclasses.replace(snap, summary={k: v for k, v in snap.summary.items() if k != "total-data-files"})
    assert batchable(_req(), dataclasses.replace(files, snapshot=unknown))  # `prepare` routes it if it has none


def test_source_counts_per_spec_and_partition() -> None:
    def f(spec: int, part: str, records: int) -> SourceFile:
        return SourceFile(None, f"/x/{part}/{records}", 10, records, spec, part, "data")

    counts = source_counts([f(0, "cat=a", 3), f(0, "cat=a", 4), f(1, "cat=a", 5), f(0, "cat=b", 1)])
    assert counts == {("data", 0, "cat=a"): [2, 7], ("data", 1, "cat=a"): [1, 5], ("data", 0, "cat=b"): [1, 1]}


def test_share_by_bytes() -> None:
    assert share(10.0, 25, 100) == 2.5
    assert share(10.0, 0, 0) == 0.0
