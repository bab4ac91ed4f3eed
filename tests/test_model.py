"""The z3 model against the runtime: pinned to the same actions, every state and every condition term agree."""

from hypothesis import given, settings

from prunecheck.checker.engines.invariants import inductive_lemmas
from prunecheck.spec.policy import Deployment
from prunecheck.symbolic.model import Model

from conftest import HOUR, RLIMIT
from support import N, POLICIES, TARGETED, agree, model_policy, runs


@settings(max_examples=40)
@given(runs())
def test_model_and_runtime_agree_on_every_state_and_condition(run):
    agree(*run, with_lemmas=False)


@settings(max_examples=25)
@given(runs())
def test_proved_lemmas_exclude_no_reachable_state(run):
    agree(*run, with_lemmas=True)


def test_houdini_drops_lemmas_that_fail_in_unsafe_deployments():
    safe = inductive_lemmas(Model(model_policy(POLICIES[0], Deployment()), N), HOUR, RLIMIT)
    unsafe = inductive_lemmas(Model(model_policy(POLICIES[0], Deployment(records="window", pins="self")), N), HOUR,
                              RLIMIT)
    assert safe.complete and unsafe.complete
    assert "record_alive[1]" in safe.names
    assert "record_alive[1]" not in unsafe.names
    assert "prefix[1]" in unsafe.names


def test_targeted_runs_agree():
    for text, deployment, actions in TARGETED:
        agree(model_policy(text, deployment), actions, with_lemmas=True)
