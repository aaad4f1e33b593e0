"""Serve moto + the kit's extension: `python -m emulator.server --port 4566`.

Started by `emulator.process.Emulator`."""

from __future__ import annotations

import argparse
import logging
import os

from werkzeug.serving import WSGIRequestHandler, run_simple


class _QuietHandler(WSGIRequestHandler):
    def log_request(self, *args: object, **kwargs: object) -> None:  # one line per request would swamp the logs
        pass


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=4566)
    args = parser.parse_args()
    os.environ.setdefault("MOTO_ALLOW_NONEXISTENT_REGION", "true")
    os.environ.setdefault("MOTO_PORT", str(args.port))
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    from emulator.app import build_app

    run_simple(args.host, args.port, build_app(), threaded=True, request_handler=_QuietHandler)


if __name__ == "__main__":
    main()
