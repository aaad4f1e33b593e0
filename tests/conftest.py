import os
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from s3tables_kit.jobs.spark import JAVA_OPTIONS_ENV

# ====================================================================================================
# BEGIN ops fixtures (status / harden / audit over real HTTP against moto + emulator/)
# Owned by the ops work; other sections of this file belong to their own issues.
# ====================================================================================================
from tests.ops_fixtures import moto_endpoint, ops_env  # noqa: F401

# ====================================================================================================
# END synth fixtures
# ====================================================================================================
# ====================================================================================================
# BEGIN spark fixtures (recovery; reusable by anything marked `spark`: one session-scoped SparkSession)
# ====================================================================================================
from tests.spark_fixtures import spark  # noqa: F401

# ====================================================================================================
# END ops fixtures
# ====================================================================================================
# ====================================================================================================
# BEGIN synth fixtures (infra: examples synthesised once per session)
# ====================================================================================================
from tests.synth_fixtures import synthesized  # noqa: F401

# ====================================================================================================
# END spark fixtures
# ====================================================================================================


# ====================================================================================================
# BEGIN metadata cache (`s3tables_kit.jobs.kernel.metadata_cache`): the tools' cache goes to a temporary directory,
# never the user's ~/.cache (also for the tools the tests start as subprocesses: they inherit the environment)
# ====================================================================================================
@pytest.fixture(autouse=True, scope="session")
def _kit_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KIT_CACHE_DIR", str(tmp_path_factory.mktemp("kit-cache")))
        # Every local Spark driver of the run (in-process and the tools the tests start): the first JIT tier only and
        # the serial collector. A test's JVM lives a minute; C2 compiling for it cost 40% of the Spark tests' CPU.
        mp.setenv(JAVA_OPTIONS_ENV, TEST_JVM_OPTIONS)
        yield


TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


# ====================================================================================================
# END metadata cache
# ====================================================================================================

# ====================================================================================================
# BEGIN environment guard: a setting the stand-in needs, set in-process, must not outlive the test (or module) that
# set it: later tests on the same worker would meet it in place of botocore's and pyarrow's defaults
# ====================================================================================================
GUARDED_ENV = ("AWS_REQUEST_CHECKSUM_CALCULATION",)


@contextmanager
def env_left_alone(what: str) -> Iterator[None]:
    """Fails when `what` leaves a `GUARDED_ENV` variable changed, after putting the variable back."""
    before = {k: os.environ.get(k) for k in GUARDED_ENV}
    yield
    left = {k: os.environ.get(k) for k in GUARDED_ENV if os.environ.get(k) != before[k]}
    for k in left:
        if before[k] is None:
            del os.environ[k]
        else:
            os.environ[k] = str(before[k])
    if left:
        pytest.fail(f"{what} left {left} in os.environ: set it with monkeypatch (undone after the test)")


@pytest.fixture(autouse=True)
def _env_guard(request: pytest.FixtureRequest) -> Iterator[None]:
    with env_left_alone(request.node.nodeid):
        yield


@pytest.fixture(autouse=True, scope="module")
def _env_guard_module(request: pytest.FixtureRequest) -> Iterator[None]:
    with env_left_alone(f"a fixture of {request.node.nodeid}"):
        yield


# ====================================================================================================
# END environment guard
# ====================================================================================================

# ====================================================================================================
# BEGIN warning exceptions (pyproject.toml `filterwarnings = ["error"]`: every warning fails its test, except these)
# ====================================================================================================
# PySpark 3.5 `DataFrame.collect()` (pyspark.util._load_from_socket) leaves its local result socket to the garbage
# collector, which warns "unclosed <socket.socket ...>" as the socket goes. Only where a SparkSession runs.
SPARK_SOCKET_WARNING = "ignore:unclosed <socket.socket:ResourceWarning"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("spark") is not None:
            item.add_marker(pytest.mark.filterwarnings(SPARK_SOCKET_WARNING))
    # Longest files first: `make test` deals whole files to its workers (--dist loadfile) in collection order, so a
    # long file collected last would run alone at the end while the other workers idle. Python's sort is stable:
    # every other file keeps its order.
    items.sort(key=lambda item: LONGEST_FIRST.get(item.path.name, len(LONGEST_FIRST)))


# The files whose tests run in the worker's own SparkSession (the `spark` fixture), in two groups: each group runs on
# one worker, so two workers start a JVM and warm it up (about half a minute of a core each) instead of every worker
# that draws one of these files. The groups are about equal in time; a file missing here is dealt on its own.
SPARK_SESSION_GROUPS = {
    "test_recover_spark.py": 1,
    "test_recover_filecopy_spark.py": 1,
    "test_vault_backup_spark.py": 1,
    "test_rehearse_spark.py": 1,
    "test_recover_faults_spark.py": 2,
    "test_sandbox.py": 2,
    "test_recover_vault_spark.py": 2,
    "test_recover_batch_spark.py": 2,
}


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """`--dist loadfile` with the SparkSession files dealt as two units (xdist's own scope hook)."""
    if config.getoption("dist", None) != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SparkGroupScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            group = SPARK_SESSION_GROUPS.get(os.path.basename(path))
            return path if group is None else f"spark-session-{group}"

    return SparkGroupScheduling(config, log)  # type: ignore[arg-type]


# The test files that take longest (each starts its own JVM, synth or emulator scenario), longest first, as measured
# with `pytest --durations`; a file missing from this list only runs later, never not at all.
LONGEST_FIRST = {
    name: rank
    for rank, name in enumerate(
        (
            "test_failover_planned.py",
            "test_recover_moto_filecopy.py",
            "test_ops_failover.py",
            "test_recover_batch_spark.py",
            "test_state_backend.py",
            "test_recover_filecopy_spark.py",
            "test_own_app.py",
            "test_recover_moto.py",
            "test_policy_attacks.py",
            "test_recover_spark.py",
            "test_recover_faults_spark.py",
            "test_ops_scale.py",
            "test_adoptgate.py",
            "test_policy_proofs.py",
            "test_recover_lakeplan.py",
            "test_failover.py",
            "test_infra_synth.py",
            "test_policy_estate_proofs.py",
            "test_ops_status.py",
            "test_recover_drill.py",
            "test_failover_drill.py",
            "test_policy_failover_proofs.py",
            "test_policy_pipeline_proofs.py",
            "test_assurance_monitor.py",
            "test_drift.py",
            "test_ops_estate.py",
            "test_ops_harden.py",
            "test_bench_ops_smoke.py",
            "test_layers.py",
            "test_sandbox.py",
            "test_make_outputs.py",
            "test_moto_disassociate.py",
            "test_moto_ext_throttling.py",
            "test_lifecycle.py",
            "test_ops_audit.py",
            "test_point_groups.py",
            "test_ops_backfill.py",
        )
    )
}


# ====================================================================================================
# END warning exceptions
# ====================================================================================================
