import pytest

# ====================================================================================================
# BEGIN ops fixtures (issue 5: status / harden / audit over real HTTP against moto + emulator/)
# Owned by the ops work; other sections of this file belong to their own issues.
# ====================================================================================================
from tests.ops_fixtures import moto_endpoint, ops_env  # noqa: F401

# ====================================================================================================
# END synth fixtures
# ====================================================================================================
# ====================================================================================================
# BEGIN spark fixtures (issue 4 recovery; reusable by anything marked `spark`: one session-scoped SparkSession)
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
# BEGIN warning exceptions (pyproject.toml `filterwarnings = ["error"]`: every warning fails its test, except these)
# ====================================================================================================
# PySpark 3.5 `DataFrame.collect()` (pyspark.util._load_from_socket) leaves its local result socket to the garbage
# collector, which warns "unclosed <socket.socket ...>" as the socket goes. Only where a SparkSession runs.
SPARK_SOCKET_WARNING = "ignore:unclosed <socket.socket:ResourceWarning"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("spark") is not None:
            item.add_marker(pytest.mark.filterwarnings(SPARK_SOCKET_WARNING))


# ====================================================================================================
# END warning exceptions
# ====================================================================================================
