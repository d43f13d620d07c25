import os
import shutil

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


@pytest.fixture(scope="session")
def golden_path() -> str:
    return os.path.join(ROOT, "core", "golden", "vectors.txt")


@pytest.fixture(scope="session")
def cli() -> str:
    """The bloomlanes CLI (BLOOMLANES_CLI, or a build under target/), for cross-checks."""
    candidates = [os.environ.get("BLOOMLANES_CLI", "")]
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    # The newest of the release and debug builds: a stale release binary left from an older
    # checkout must not answer for the code under test (cargo test builds the debug one).
    builds = [os.path.join(target, p, "bloomlanes") for p in ("release", "debug")]
    builds = [b for b in builds if os.path.isfile(b)]
    candidates += sorted(builds, key=os.path.getmtime, reverse=True)
    candidates.append(shutil.which("bloomlanes") or "")
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    print("SKIP: bloomlanes CLI not built (set BLOOMLANES_CLI); CLI cross-checks skipped")
    pytest.skip("SKIP: bloomlanes CLI not built (set BLOOMLANES_CLI)")
