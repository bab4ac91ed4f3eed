"""Shared constants, hypothesis profiles and the unit tier of the test suite."""

import contextlib
import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "policies"

# Tests bound every solver by its resource count (z3 rlimit per query, cvc5 rlimit-per), never by seconds, so that a
# loaded machine cannot change an outcome (docs/decisions/0005-resource-limits-in-tests.md). HOUR is a time limit no
# test reaches, a hang guard only; RLIMIT decides.
HOUR = 3600.0
RLIMIT = 100_000_000
BOUNDS = {"timeout": HOUR, "rlimit": RLIMIT}
CLI_BOUNDS = ["--timeout", str(int(HOUR)), "--rlimit", str(RLIMIT)]
# A child process (python, dot, chromium) that takes longer is hung: the guard fails such a test instead of stalling
# the suite, and is far above any healthy run on a loaded machine, so it never decides a test that would pass.
HANG_GUARD = 600
# Python function calls (and calls into C) one parse may make: "bounded quickly" as work, which load cannot change.
# The dearest hostile input in the tests, 80 KB of `+ 1`, takes about 1.1 million.
PARSE_CALLS = 5_000_000


class Calls:
    count = 0


@contextlib.contextmanager
def counted_calls():
    """Count the function calls made inside the block (this thread), a deterministic measure of work."""
    calls = Calls()

    def profile(frame, event, arg):
        if event == "call" or event == "c_call":
            calls.count += 1

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield calls
    finally:
        sys.setprofile(previous)


# Derandomized by default, so every run of the suite draws the same examples: a property test that calls a solver
# then takes the same time on every run (a random draw once found a policy whose bounded search was still running
# after 6 minutes at the tests' rlimit). `HYPOTHESIS_PROFILE=explore pytest ...` draws new examples, to look for new failures.
settings.register_profile("default", deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("explore", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

# tests/data/golden holds generated pytest modules as data (tests/golden.py): compared as text, never collected.
collect_ignore = ["data"]

# The unit tier, `pytest -m unit` (the edit-test loop, under a minute with -n 2): whole modules that run no
# long solver search. A slow-marked test in them stays out, since `-m unit` replaces addopts' `-m 'not slow'`.
UNIT_MODULES = frozenset({
    "test_accept", "test_api", "test_conditions", "test_findings", "test_graph_picture", "test_help",
    "test_hostile", "test_hostile_code", "test_hostile_yaml", "test_html_locations", "test_itf_py", "test_layers",
    "test_limits", "test_options", "test_output_paths", "test_parser", "test_policy_schema", "test_pyform_arith",
    "test_python_scripts", "test_replay_policy", "test_runtime", "test_sarif", "test_schema_command", "test_stats",
    "test_structure", "test_suite", "test_trace_locations", "test_unknowns", "test_walker",
})


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.stem in UNIT_MODULES and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.unit)
