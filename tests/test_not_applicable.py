"""A check whose conditions asked for do not apply to the policy says so, and exits as the unknown it prints."""

import io

from prunecheck.checker import cli
from prunecheck.spec.conditions import BY_ID, CONDITION_TABLE

from conftest import CLI_BOUNDS, EXAMPLES


def test_only_a_condition_that_does_not_apply_is_unknown_with_exit_3(tmp_path):
    off = tmp_path / "off.yaml"
    off.write_text('tool_calls: "off"\n')
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["check", str(EXAMPLES / "seed_flawed.yaml"), "--only", "T1", "--deployment", str(off),
                     *CLI_BOUNDS], out, err)
    assert code == 3, err.getvalue()
    assert "nothing checked: no condition asked for applies to this policy" in out.getvalue()
    assert "verdict: unknown" in out.getvalue()
    assert "T1 not checked: it applies only where the agent calls tools (`tool_calls: on`)" in err.getvalue()


def test_every_condition_that_does_not_always_apply_says_where_it_does():
    # A condition reported for only some policies names where (what the note above prints).
    from prunecheck.spec.policy import Deployment, Policy
    from prunecheck.spec.policy import BoolLit

    nowhere = Policy("p", BoolLit(False), deployment=Deployment(tool_calls="off", evidence="off"))
    missing = [c.id for c in CONDITION_TABLE if not c.applies(nowhere) and not c.applies_when]
    assert missing == [], f"conditions without applies_when: {missing}"
    assert BY_ID["C1"].applies_when == ""
