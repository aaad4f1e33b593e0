"""The two Python steps of `make wheel-check` (scripts/wheel-check.sh), each run by the interpreter that step needs.

serve DIR PORT_FILE   a Maven repository on 127.0.0.1 serving DIR (the checkout's interpreter, in the background);
                      the port it got is written to PORT_FILE once it listens
recover WAREHOUSES    in the installed kit's environment, away from the checkout: a small Iceberg table written by
                      Spark into a local replica warehouse, `s3tables-kit recover` of it (the pinned jars fetched
                      on first use), and the recovered table read back by pyiceberg (no Spark), compared row by row
"""

from __future__ import annotations

import functools
import http.server
import os
import sys
from pathlib import Path
from typing import Any

ROWS = [(1, 9.5), (2, 20.0), (3, 7.25)]


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def serve(directory: str, port_file: str) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=directory))
    Path(port_file + ".tmp").write_text(str(server.server_address[1]))
    os.replace(port_file + ".tmp", port_file)  # the script waits for a whole port number
    server.serve_forever()


def recover(warehouses: Path) -> None:
    from pyiceberg.table import StaticTable

    from s3tables_kit.cli import main
    from s3tables_kit.jobs.kernel.catalogs import CatalogSpec, catalog_conf, file_uri
    from s3tables_kit.jobs.spark import build_session

    replica, recovered = warehouses / "replica", warehouses / "recovered"
    spark = build_session(catalog_conf(CatalogSpec("replica", "hadoop", file_uri(replica))), cores=1)
    spark.sql("CREATE TABLE replica.analytics.orders (id BIGINT, amount DOUBLE) USING iceberg")
    spark.sql(f"INSERT INTO replica.analytics.orders VALUES {', '.join(map(str, ROWS))}")
    argv = ["recover", "--catalog-mode", "hadoop", "--table", "analytics.orders", "--report", str(warehouses)]
    rc = main([*argv, "--replica-warehouse", str(replica), "--target-warehouse", str(recovered)])
    assert rc == 0, f"s3tables-kit recover exited {rc}"
    versions = (recovered / "analytics" / "orders" / "metadata").glob("v*.metadata.json")
    metadata = max(versions, key=lambda p: int(p.name[1:].split(".")[0]))
    table = StaticTable.from_metadata(str(metadata))
    got = sorted((r["id"], r["amount"]) for r in table.scan().to_arrow().to_pylist())
    assert got == ROWS, f"the recovered table holds {got}, not {ROWS}"
    print(f"wheel-check: recovered analytics.orders, {len(got)} rows read back by pyiceberg")


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3])
    else:
        recover(Path(sys.argv[2]))
