"""What ships is derived from the entries' imports (`topology/shipping.py`): the rule on a small tree and on the real
monitor, and the real Lambda packages imported module by module from the unzipped package alone by an interpreter
limited to what the Lambda runtime has (the standard library and the SDK); a package that lacks one module fails."""

from __future__ import annotations

import io
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from s3tables_kit.infra import packaging
from s3tables_kit.topology import shipping

# The Lambda Python runtime: the standard library, the SDK and the SDK's own dependencies.
LAMBDA_SDK = (*sorted(shipping.LAMBDA_RUNTIME), "s3transfer", "jmespath", "dateutil", "urllib3", "six")
PROBE = """
import importlib, os, sys
here, allowed = os.getcwd(), set(sys.argv[2].split(","))
class Runtime:  # what the runtime has; nothing else of this interpreter's environment
    def find_spec(self, name, path=None, target=None):
        top = name.split(".")[0]
        if top in sys.stdlib_module_names or top in allowed or top == "s3tables_kit":
            return None
        raise ModuleNotFoundError(f"not in the runtime: {name}", name=name)
sys.meta_path[:] = [Runtime(), *(f for f in sys.meta_path if "editable" not in type(f).__module__)]
sys.path[:] = [here] + [p for p in sys.path if p and not os.path.isdir(os.path.join(p, "s3tables_kit"))]
for module in sys.argv[1].split(","):
    importlib.import_module(module)
outside = sorted(n for n, m in sys.modules.items() if n.split(".")[0] == "s3tables_kit"
                 and not (getattr(m, "__file__", None) or here).startswith(here))
assert not outside, f"imported from outside the package: {outside}"
"""


def import_alone(package: bytes, where: Path, modules: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    """Unzip `package` into `where` and import each of `modules` (paths under the kit) from there alone."""
    zipfile.ZipFile(io.BytesIO(package)).extractall(where)
    names = ",".join(
        f"{shipping.PACKAGE}." + m.removesuffix(".py").removesuffix("/__init__").replace("/", ".") for m in modules
    )
    cmd = [sys.executable, "-I", "-c", PROBE, names, ",".join(LAMBDA_SDK)]
    return subprocess.run(cmd, cwd=where, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize("kind", ["monitor", "hardener"])
def test_every_shipped_module_imports_from_its_lambda_package_alone(kind: str, tmp_path: Path) -> None:
    if kind == "monitor":
        package, modules = packaging.monitor_zip(), packaging.monitor_modules()
    else:
        package = packaging.hardener_zip(("kit_harden.json", b"{}"))
        modules = (*packaging.monitor_modules(), *packaging.hardener_modules())
        assert packaging.HARDENER_ENTRY in modules
    out = import_alone(package, tmp_path, modules)
    assert out.returncode == 0, out.stderr[-2000:]


def test_a_package_without_a_module_its_entry_imports_fails(tmp_path: Path) -> None:
    package = zipfile.ZipFile(io.BytesIO(packaging.monitor_zip()))
    kept = [n for n in package.namelist() if n != "s3tables_kit/jobs/kernel/render.py"]
    smaller = io.BytesIO()
    with zipfile.ZipFile(smaller, "w") as z:
        for name in kept:
            z.writestr(name, package.read(name))
    out = import_alone(smaller.getvalue(), tmp_path, (packaging.MONITOR_MODULE,))
    assert out.returncode != 0 and "No module named 's3tables_kit.jobs.kernel.render'" in out.stderr


def test_the_monitor_ships_what_its_handler_can_run_in_lambda() -> None:
    modules = packaging.monitor_modules()
    # imported inside the handler (the freshness mode) and inside the session builder: shipped
    assert {"jobs/ops/freshness.py", "jobs/aws_timestamps.py", "jobs/__init__.py"} <= set(modules)
    # imported inside the command line's functions, and needing pydantic, which the runtime lacks: left out
    assert {"topology/outputs.py", "topology/config.py"}.isdisjoint(modules)
    # imported only by `status`'s command line (`main`), which a handler never runs: left out though it could load
    assert "jobs/ops/status_channels.py" not in modules
    assert shipping.loads_with("jobs/ops/status_channels.py") <= shipping.LAMBDA_RUNTIME
    assert shipping.loads_with("topology/outputs.py") - shipping.LAMBDA_RUNTIME == {"pydantic"}


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, code in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(code)
    return root


def test_the_rule_on_a_small_tree(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "jobs/__init__.py": "",
            "jobs/entry.py": (
                "from typing import TYPE_CHECKING\nimport json\nimport boto3\n"
                "from s3tables_kit.jobs import eager\n"
                "if TYPE_CHECKING:\n    from s3tables_kit.jobs import typed\n"
                "def handler():\n    from s3tables_kit.jobs.lazy import run\n    return run()\n"
                "def cli():\n    from s3tables_kit.jobs.cli_only import load\n    return load()\n"
                "def main(argv):\n    from s3tables_kit.jobs.tool import run\n    return run(argv)\n"
            ),
            "jobs/tool.py": "import json\n",
            "jobs/eager.py": "import os\n",
            "jobs/typed.py": "",
            "jobs/lazy.py": "from s3tables_kit.jobs import deeper\ndef run(): ...\n",
            "jobs/deeper.py": "import botocore\n",
            "jobs/cli_only.py": "from s3tables_kit.jobs import model\n",
            "jobs/model.py": "import pydantic\n",
        },
    )
    sdk = frozenset({"boto3", "botocore"})
    lambda_ = shipping.shipped_modules(["jobs/entry.py"], sdk, root, command_lines=False)
    assert lambda_ == ("jobs/__init__.py", "jobs/deeper.py", "jobs/eager.py", "jobs/entry.py", "jobs/lazy.py")
    assert set(shipping.shipped_modules(["jobs/entry.py"], sdk, root)) - set(lambda_) == {"jobs/tool.py"}
    anywhere = shipping.shipped_modules(["jobs/entry.py"], None, root)
    assert set(anywhere) - set(lambda_) == {"jobs/cli_only.py", "jobs/model.py", "jobs/tool.py"}  # never `typed`
    (root / "jobs/eager.py").write_text("from . import deeper\n")
    shipping.imports_of.cache_clear()
    with pytest.raises(ValueError, match=r"jobs/eager.py:1: a relative import"):
        shipping.shipped_modules(["jobs/entry.py"], None, root)
    shipping.imports_of.cache_clear()
