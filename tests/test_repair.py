"""`prunecheck repair`: candidate order, text surgery in every form, the re-parse guard, and proved repairs."""

from dataclasses import replace

import io
import json
import subprocess
import sys

import pytest
from hypothesis import given, settings, strategies as st

from prunecheck.checker.commands import repair_text
from prunecheck.checker.cli import main
from prunecheck.checker.language.loader import expected_verdicts, load_policy, parse_policy_text
from prunecheck.checker.check import check
from prunecheck.checker.options import CheckOptions
from prunecheck.checker.commands.repair import (
    available_changes, candidate_sets, check_candidate, preference, repair, run_violations,
)
from prunecheck.checker.commands.repair_cli import add_parser, run as run_repair
from prunecheck.checker.commands.repair_text import Change, edited_text, repaired_policy, repaired_text, unified_diff
from prunecheck.checker.result import Verdict
from prunecheck.checker.language.typecheck import check_policy
from prunecheck.spec.conditions import CONDITIONS, applicable
from prunecheck.spec.errors import PolicySyntaxError
from prunecheck.spec.policy import DeploymentOverride
from prunecheck.spec.runtime import Append, Compact, Edit

from prunecheck.strategies import EXTENSION, policy_texts

import prunecheck

from conftest import BOUNDS, CLI_BOUNDS, HANG_GUARD, HOUR
from policy_table import EXAMPLES

RECORDS = Change("exclude", kinds=("record",))
RATIONALE = Change("exclude", kinds=("rationale",))
BOTH = Change("exclude", kinds=("record", "rationale"))
DROP_BUDGET = Change("drop_budget")
PAIRS = Change("pairs")


def flip(key, value):
    return Change("deployment", key=key, value=value)


# Under the default deployment (ADR 0035) a policy that removes spans violates M1 and J1 (`evicted: destroyed`,
# `justification: unchecked`): its repair sets these two as the safe design does.
TOMBSTONE, DOWNGRADE = flip("evicted", "tombstone"), flip("justification", "downgrade")
# The first seed's repair of records under a truncating host (hosted, some tests at bounds tuned to it), the
# alternatives search and a policy safe under the first seed's deployment state `evidence: "off"`: M1, A1 and J1 stay
# out of them (the repairs under the defaults are tested on the examples as shipped and on an inline JSON policy).
FIRST_SEED = {"evidence": "off"}


def first_seed(text, name, **keys):
    """text (YAML or JSON) with FIRST_SEED and keys set in its deployment."""
    keys = {**FIRST_SEED, **keys}
    if name.endswith(".json"):
        document = json.loads(text)
        document.setdefault("deployment", {}).update(keys)
        return json.dumps(document, indent=1) + "\n"
    lines = "".join(f'  {k}: "{v}"\n' for k, v in keys.items())
    if "\ndeployment:\n" not in text:
        return text + "deployment:\n" + lines
    return text.replace("\ndeployment:\n", "\ndeployment:\n" + lines, 1)


def hosted(tmp_path, name, text=None):
    """A copy of the example `name` (or of `text`) under a host that truncates (host_truncation: on, SPEC §2), where
    excluding records by the policy's text no longer protects them: moving them is the repair. The agent calls no
    tools (tool_calls: off), so T1 and its repair `pairs: together` (tested on their own below) stay out of it, and
    keeps no evidence (FIRST_SEED)."""
    text = (EXAMPLES / name).read_text() if text is None else text
    path = tmp_path / name
    path.write_text(first_seed(text, name, host_truncation="on", tool_calls="off"))
    (tmp_path / "prunecheck.toml").write_text("trust-policy-deployment = true\n")  # a human-authored test file
    return path


def cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(["repair", "--trust-policy-deployment", *CLI_BOUNDS, *argv], out, err,  # human-authored test files
                extra_commands={"repair": (add_parser, run_repair)})
    return code, out.getvalue(), err.getvalue()


def surgery(text, source, changes):
    """The edited text, after asserting it parses to exactly the intended repaired policy."""
    policy = parse_policy_text(text, source)
    new = edited_text(text, source, policy, changes)
    assert parse_policy_text(new, source) == repaired_policy(policy, changes, repair_text.form_of(source))
    return new


def changed_lines(old, new):
    return [line for line in unified_diff(old, new, "p").splitlines()[2:] if line[:1] in "+-"]


# --------------------------------------------------------------------------- candidates


def without_tools(policy):
    """policy under `tool_calls: off`: T1 is not asked, so `pairs: together` is no candidate."""
    return replace(policy, deployment=replace(policy.deployment, tool_calls="off"))


def tombstoned(policy):
    """policy under `evicted: tombstone` and `justification: downgrade`: neither is a candidate."""
    return replace(policy, deployment=replace(policy.deployment, evicted="tombstone", justification="downgrade"))


def test_changes_are_ordered_text_then_deployment_then_budget_and_only_unsafe_keys_flip():
    # records: window, audit: policy, budget; evicted and justification at their defaults
    policy = without_tools(load_policy(EXAMPLES / "self_certified_budget.yaml"))
    records, audit = flip("records", "undo_region"), flip("audit", "independent")
    assert available_changes(policy) == (RECORDS, RATIONALE, BOTH, records, audit, TOMBSTONE, DOWNGRADE, DROP_BUDGET)
    policy = tombstoned(policy)
    assert available_changes(policy) == (RECORDS, RATIONALE, BOTH, records, audit, DROP_BUDGET)
    assert available_changes(policy, allow_deployment=False) == (RECORDS, RATIONALE, BOTH, DROP_BUDGET)
    sets = list(candidate_sets(available_changes(policy)))
    # Keeping the budget first, then fewer deployment settings, then the narrower exclusion (none, one kind, both).
    assert sets[:11] == [(RECORDS,), (RATIONALE,), (BOTH,), (records,), (audit,), (RECORDS, records),
                         (RECORDS, audit), (RATIONALE, records), (RATIONALE, audit), (BOTH, records), (BOTH, audit)]
    assert sets[11:15] == [(records, audit), (RECORDS, records, audit), (RATIONALE, records, audit),
                           (BOTH, records, audit)]
    assert all(DROP_BUDGET in s for s in sets[15:]) and sets[15] == (DROP_BUDGET,)
    assert sets[-1] == (BOTH, records, audit, DROP_BUDGET)
    assert all(sum(c.kind == "exclude" for c in s) <= 1 for s in sets)
    assert len(sets) == len(set(sets)) == 4 * 8 - 1  # one exclusion or none, times any subset of the rest


def test_pairs_together_is_a_text_change_offered_where_t1_is_asked_and_never_a_host_fact():
    policy = load_policy(EXAMPLES / "self_certified_budget.yaml")  # role-blind, under tool_calls: on (ADR 0033)
    records, audit = flip("records", "undo_region"), flip("audit", "independent")
    assert available_changes(policy) == (RECORDS, RATIONALE, BOTH, PAIRS, records, audit, TOMBSTONE, DOWNGRADE,
                                         DROP_BUDGET)
    sets = list(candidate_sets(available_changes(policy)))
    assert sets[:3] == [(RECORDS,), (RATIONALE,), (PAIRS,)]  # one text change (the narrower first)
    text_only = [i for i, changes in enumerate(sets) if all(c.kind in ("exclude", "pairs") for c in changes)]
    assert text_only == list(range(7))  # every set of text changes before any deployment change
    together = replace(policy, pairs="together")
    assert PAIRS not in available_changes(together) and PAIRS not in available_changes(without_tools(policy))
    hosted_policy = replace(policy, deployment=replace(policy.deployment, tool_calls="off", host_truncation="on",
                                                       evidence="off"))
    assert all(c.key not in ("tool_calls", "host_truncation", "evidence") for c in available_changes(hosted_policy))


@pytest.mark.parametrize("source, text, added", [
    ("p.yaml", "name: p\nevict: age > 2\nbudget: 10\n", "evict: age > 2\npairs: together\nbudget: 10\n"),
    ("p.yaml", "name: p\nevict: age > 2\n", "evict: age > 2\npairs: together\n"),
    ("p.yaml", "name: p\nevict: age > 2\npairs: 'apart'\n", "pairs: 'together'\n"),
    ("p.py", "def evict(span, window):\n    return span.age > 2\n", 'PAIRS = "together"\n\n\ndef evict'),
    ("p.py", "PAIRS = 'apart'\n\ndef evict(span, window):\n    return span.age > 2\n", "PAIRS = 'together'\n"),
    ("p.json", '{"name": "p", "evict": "age > 2", "budget": 3}', '"evict": "age > 2", "pairs": "together", "budget"'),
    ("p.json", '{\n  "name": "p",\n  "evict": "age > 2"\n}\n', '"evict": "age > 2",\n  "pairs": "together"\n}'),
])
def test_pairs_together_is_a_minimal_edit(source, text, added):
    assert added in surgery(text, source, (PAIRS,))


UNIT_CHANGES = (RECORDS, RATIONALE, BOTH, *(flip(k, v) for k, v in (
    ("records", "undo_region"), ("rationale", "decision_log"), ("pins", "host"), ("audit", "independent"),
    ("undo", "versioned"))), DROP_BUDGET)


@settings(max_examples=40)
@given(st.lists(st.sampled_from(UNIT_CHANGES), unique=True, min_size=1))
def test_the_order_keeps_the_budget_first_then_fewer_deployment_changes_then_subsets(picked):
    available = tuple(c for c in UNIT_CHANGES if c in picked)  # in available_changes' own order
    sets = list(candidate_sets(available))
    rank = {changes: i for i, changes in enumerate(sets)}
    assert len(rank) == len(sets) >= len(available)
    for a in sets:
        for b in sets:
            if DROP_BUDGET in b and DROP_BUDGET not in a:
                assert rank[a] < rank[b]  # every set that keeps the budget comes before any that drops it
            if set(a) < set(b):
                assert rank[a] < rank[b]
    deployments = [sum(c.kind == "deployment" for c in s) for s in sets if DROP_BUDGET not in s]
    assert deployments == sorted(deployments)
    assert [preference(s, available) for s in sets] == sorted(preference(s, available) for s in sets)


def test_a_known_counterexample_screens_candidates_on_the_runtime():
    policy = load_policy(EXAMPLES / "seed_flawed.yaml")
    c1_run = (Append("stack_trace", 1), Edit(0, "destroy"))  # the record is a candidate at once
    c2_run = c1_run + (Compact(),)
    assert run_violations(policy, c1_run, 6) == {"C1"}
    # compact evicts the record (C2; C4 under audit: policy) and the edited span, of which it keeps no tombstone (M1)
    assert run_violations(policy, c2_run, 6) == {"C1", "C2", "C4", "M1"}
    assert run_violations(repaired_policy(policy, (RATIONALE,), "yaml"), c2_run, 6) == {"C1", "C2", "C4", "M1"}
    assert run_violations(repaired_policy(policy, (RECORDS,), "yaml"), c2_run, 6) == {"M1"}
    assert run_violations(repaired_policy(policy, (TOMBSTONE,), "yaml"), c2_run, 6) == {"C1", "C2", "C4"}
    assert run_violations(repaired_policy(policy, (RECORDS, TOMBSTONE), "yaml"), c2_run, 6) == set()
    assert run_violations(policy, c1_run, 2) == set()  # the edit needs two more span slots: not enabled


# --------------------------------------------------------------------------- text surgery


def test_yaml_plain_evict_gets_one_conjunct_and_keeps_comments():
    text = (EXAMPLES / "seed_flawed.yaml").read_text()
    new = surgery(text, "p.yaml", (RECORDS, flip("audit", "independent")))
    assert changed_lines(text, new) == [
        "-evict: not pinned and recency * frequency < 0.25",
        '+evict: not pinned and recency * frequency < 0.25 and kind != "record"',
        "-  audit: policy",
        "+  audit: independent",
    ]
    assert new.splitlines()[:3] == text.splitlines()[:3]  # the comments are kept


@pytest.mark.parametrize("evict_line, expected", [
    ("evict: kind == 'diff' or idle > 3", "evict: (kind == 'diff' or idle > 3) and kind != 'record'"),
    ("evict: \"kind == 'diff'\"", "evict: \"kind == 'diff' and kind != 'record'\""),
    ("evict: 'kind == \"diff\"'", "evict: 'kind == \"diff\" and kind != \"record\"'"),
    ("evict: age > 2 if pinned else idle > 3  # comment",
     'evict: (age > 2 if pinned else idle > 3) and kind != "record"  # comment'),
])
def test_yaml_scalar_styles_are_extended_in_place(evict_line, expected):
    text = f"name: p\n{evict_line}\ndeployment:\n  records: window\n"
    new = surgery(text, "p.yaml", (RECORDS,))
    assert new == text.replace(evict_line, expected)


def test_yaml_block_scalar_and_flow_mapping_are_rewritten_double_quoted():
    text = ("name: p\nevict: |\n  kind == 'diff'\n  or idle > 3\n\nbudget: 40\n"
            "deployment: {records: window, pins: self}\n")
    new = surgery(text, "p.yaml", (BOTH, flip("records", "undo_region"), DROP_BUDGET))
    assert new == ("name: p\nevict: \"(kind == 'diff'\\nor idle > 3\\n) and kind not in ['record', 'rationale']\"\n"
                   "deployment: {records: undo_region, pins: self}\n")


@pytest.mark.parametrize("budget_at", ["middle", "end"])
def test_json_edits_keep_valid_json(budget_at):
    entries = ['"name": "j"', "\"evict\": \"kind != 'record' and not edited\"",
               '"deployment": {"rationale": "window", "pins": "self"}']
    entries.insert(2 if budget_at == "middle" else 3, '"budget": 300')
    text = "{\n  " + ",\n  ".join(entries) + "\n}\n"
    new = surgery(text, "p.json", (RATIONALE, flip("rationale", "decision_log"), DROP_BUDGET))
    doc = json.loads(new)
    assert "budget" not in doc and doc["deployment"] == {"rationale": "decision_log", "pins": "self"}
    assert doc["evict"] == "kind != 'record' and not edited and kind != 'rationale'"


def test_python_form_gets_a_first_if_and_literal_edits():
    text = (EXAMPLES / "seed_flawed.py").read_text().replace('NAME = "seed-recency-frequency-py"\n',
                                                             'NAME = "seed-recency-frequency-py"\nBUDGET = 500\n')
    new = surgery(text, "p.py", (BOTH, flip("pins", "host"), DROP_BUDGET))
    assert changed_lines(text, new) == [
        "-BUDGET = 500",
        '-DEPLOYMENT = {"records": "window", "pins": "self", "audit": "policy"}',
        '+DEPLOYMENT = {"records": "window", "pins": "host", "audit": "policy"}',
        '+    if span.kind in ["record", "rationale"]:',
        "+        return False",
    ]
    crlf = text.replace("\n", "\r\n")
    assert surgery(crlf, "p.py", (RECORDS,)) == surgery(text, "p.py", (RECORDS,)).replace("\n", "\r\n")


def test_python_edits_count_characters_where_ast_counts_bytes():
    # Python reads the full-width names as BUDGET and DEPLOYMENT; each of their letters is 3 bytes in ast's columns.
    text = ('NAME = "p"\nＢＵＤＧＥＴ = 500  # é\nＤＥＰＬＯＹＭＥＮＴ = {"records": "window", "pins": "self"}\n\n'
            "def evict(span, window):\n    return span.idle > 3\n")
    new = surgery(text, "p.py", (RECORDS, flip("pins", "host"), DROP_BUDGET))
    assert changed_lines(text, new) == [
        "-ＢＵＤＧＥＴ = 500  # é",
        '-ＤＥＰＬＯＹＭＥＮＴ = {"records": "window", "pins": "self"}',
        '+ＤＥＰＬＯＹＭＥＮＴ = {"records": "window", "pins": "host"}',
        "+    if span.kind == \"record\":",
        "+        return False",
    ]


def test_a_shape_without_a_minimal_edit_is_reprinted_whole():
    text = "NAME = 'p'\nDEPLOYMENT = {'records': 'window'}\n\ndef evict(span, window): return span.idle > 3\n"
    policy = parse_policy_text(text, "p.py")
    new, parsed, reprinted = repaired_text(text, "p.py", policy, (RECORDS,))
    assert reprinted and parsed == parse_policy_text(new, "p.py") == repaired_policy(policy, (RECORDS,), "python")
    assert "if span.kind == 'record':" in new


def test_an_edit_that_does_not_reparse_to_the_repair_is_never_used(monkeypatch):
    text = (EXAMPLES / "seed_flawed.yaml").read_text()
    policy = parse_policy_text(text, "p.yaml")
    # an edit that lands in the wrong place: the result parses, but to another policy
    monkeypatch.setattr(repair_text, "edited_text", lambda t, *_: t.replace("< 0.25", "< 0.25 or kind == 'diff'"))
    new, parsed, reprinted = repaired_text(text, "p.yaml", policy, (RECORDS,))
    assert reprinted and parsed == parse_policy_text(new, "p.yaml") == repaired_policy(policy, (RECORDS,), "yaml")
    assert "kind == 'diff'" not in new and "# " not in new  # the whole policy, printed afresh


def test_a_policy_that_differs_from_its_text_is_refused():
    path = EXAMPLES / "seed_flawed.yaml"
    policy = load_policy(path, deployment_override=repair_text.SAFE_DEPLOYMENT)
    with pytest.raises(PolicySyntaxError, match="differs from its text"):
        repair(policy, path.read_text(), str(path))


# --------------------------------------------------------------------------- proved repairs


def assert_proved(result):
    assert result.repaired and result.report is not None
    assert [r.condition for r in result.report.results] == list(applicable(result.policy))
    assert all(r.verdict == Verdict.HOLDS and r.certificate for r in result.report.results)
    assert parse_policy_text(result.text, result.original.source) == result.policy


def test_yaml_repair_moves_records_out_of_the_window_printed_as_a_diff(tmp_path):
    source = str(hosted(tmp_path, "seed_flawed.yaml"))
    out = tmp_path / "fixed.yaml"
    code, stdout, err = cli(source, "--format", "json", "--out", str(out), "--alternatives", "0")
    assert code == 0 and f"wrote {out}" in err
    doc = json.loads(stdout)
    assert doc["status"] == "repaired" and doc["original"]["conditions"]["C1"] == "violated"
    # A conjunct excluding records keeps them from eviction, not from a truncating host's budget (C2).
    assert [(c["kind"], c["key"], c["value"]) for c in doc["changes"]] == [("deployment", "records", "undo_region")]
    assert all(c["verdict"] == "holds" and "re-checked by cvc5" in c["reason"] for c in doc["conditions"].values())
    assert doc["diff"].startswith(f"--- a/{source.lstrip('/')}\n+++ b/{source.lstrip('/')}\n")
    assert '-  records: window\n+  records: undo_region\n' in doc["diff"]
    assert out.read_text() == doc["text"]
    assert load_policy(out) == repaired_policy(load_policy(source), (flip("records", "undo_region"),), "yaml")


def test_python_repair_is_proved_and_text_output_names_each_condition():
    # No host truncates (host_truncation: off, SPEC §2), so excluding records in the policy's text is the repair:
    # the seed's condition 1 accepts "a policy predicate that structurally excludes the undo region".
    # The predicate is role-blind, so T1 is asked too (ADR 0033) and PAIRS is set. M1 and J1 are asked too (the
    # default `evidence: on`, ADR 0035): the deployment gains tombstones and downgrades.
    path = EXAMPLES / "seed_flawed.py"
    code, stdout, _ = cli(str(path), "--alternatives", "0")
    assert code == 0
    assert "exclude recovery records from eviction: evict first returns False when `span.kind == \"record\"`" in stdout
    assert 'keep each tool call with its result: set PAIRS to "together"' in stdout
    assert "deployment: set evicted to tombstone" in stdout and "deployment: set justification to downgrade" in stdout
    assert {c for c in CONDITIONS if f"  {c}  holds  " in stdout} == set(applicable(load_policy(path)))
    assert stdout.count("certificate re-checked by cvc5") == len(applicable(load_policy(path))) == 10
    assert '+PAIRS = "together"\n+\n+\n def evict(span, window):\n+    if span.kind == "record":\n+        return False\n' in stdout
    assert ('+DEPLOYMENT = {"records": "window", "pins": "self", "audit": "policy", "evicted": "tombstone", '
            '"justification": "downgrade"}\n') in stdout
    assert "expect table still says violated for C1, C2, C4, T1, M1, J1\n" in stdout


def test_json_repair_moves_rationale_out_of_the_window():
    text = ('{"name": "j", "evict": "kind != \'record\' and not edited and age >= 3",\n'
            ' "deployment": {"rationale": "window", "host_truncation": "on", "tool_calls": "off"}}\n')
    policy = parse_policy_text(text, "p.json")
    result = repair(policy, text, "p.json", alternatives=0, options=CheckOptions(**BOUNDS))
    assert_proved(result)
    # Excluding rationale from evict is not enough under a host that truncates: its budget truncates it (P1). What
    # the policy evicts is destroyed and cited spans are taken (M1, J1: the defaults): tombstones and downgrades.
    assert result.changes == (flip("rationale", "decision_log"), TOMBSTONE, DOWNGRADE)
    assert all(result.original.result(c).verdict == Verdict.VIOLATED for c in ("P1", "M1", "J1"))
    assert json.loads(result.text)["deployment"] == {"rationale": "decision_log", "host_truncation": "on",
                                                     "tool_calls": "off", "evicted": "tombstone",
                                                     "justification": "downgrade"}


def test_text_only_repair_of_records_in_the_window_is_impossible_and_says_why(tmp_path):
    code, stdout, _ = cli(str(hosted(tmp_path, "kind_excludes_records.json")), "--text-only", "--alternatives", "0")
    assert code == 1 and "no text repair can exist for C2" in stdout and "compact(budget=1)" in stdout


def test_text_only_repair_of_blind_undo_is_impossible_and_says_why():
    code, stdout, _ = cli(str(EXAMPLES / "blind_undo.yaml"), "--text-only")
    assert code == 1
    assert "no text repair can exist for C3" in stdout and "has no compact step" in stdout
    # 7 text candidates: three exclusions, pairs: together (T1 is violated too), each exclusion with it.
    assert "violates C3 under all 7 text candidates too" in stdout and "undo: blind" in stdout
    assert "---" not in stdout


def test_the_seeds_safe_design_needs_no_repair():
    code, stdout, _ = cli(str(EXAMPLES / "seed_safe_design.yaml"))
    assert code == 0 and "every condition already holds; nothing to repair" in stdout
    # With T1 (pairs: together, ADR 0033) and the second seed's M1, A1, J1 (evidence: on).
    assert stdout.count("  holds  ") == 10 and "---" not in stdout


def test_a_safe_policy_without_a_deployment_section_needs_no_repair(tmp_path):
    # The first seed's deployment at its defaults. The one key its section states is FIRST_SEED's: under the second
    # seed's defaults (`evicted: destroyed`, `justification: unchecked`) no policy that evicts holds M1 and J1.
    path = tmp_path / "safe.yaml"
    path.write_text(first_seed("name: safe\nevict: not pinned and age > 3\npairs: together\n", path.name))
    code, stdout, _ = cli(str(path))
    assert code == 0 and "every condition already holds; nothing to repair" in stdout
    assert stdout.count("  holds  ") == len(applicable(load_policy(path))) == 7 and "---" not in stdout


def test_input_errors_exit_2(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nevict: kind ==\n")
    assert cli(str(bad))[0] == 2
    assert cli(str(tmp_path / "missing.yaml"))[0] == 2


def unsafe_examples():
    return [p for p in sorted(EXAMPLES.iterdir()) if p.suffix != ".toml" and "violated" in expected_verdicts(p).values()]


@pytest.mark.slow
@pytest.mark.parametrize("path", unsafe_examples(), ids=lambda p: p.name)
def test_every_unsafe_example_has_a_proved_repair(path):
    policy = load_policy(path)
    result = repair(policy, path.read_text(), str(path), options=CheckOptions(**BOUNDS))
    assert_proved(result)
    # At most one change per flaw the examples have: records (an exclusion or records: undo_region), rationale,
    # tombstones (M1) and downgrades (J1); the search tries fewer deployment changes first.
    assert not result.reprinted and len(result.changes) <= 4


@pytest.mark.parametrize("form", ["yaml", "json", "python"])
@settings(max_examples=15)
@given(data=st.data())
def test_every_candidate_is_a_minimal_edit_of_generated_policy_files(form, data):
    text = data.draw(policy_texts(form))
    source = "p" + EXTENSION[form]
    policy = parse_policy_text(text, source)
    for changes in candidate_sets(available_changes(policy)):
        try:
            check_policy(repaired_policy(policy, changes, form))
        except PolicySyntaxError:  # dropping a budget that evict or rank reads
            continue
        new, parsed, reprinted = repaired_text(text, source, policy, changes)
        assert not reprinted and parsed == repaired_policy(policy, changes, form)
        assert len(changed_lines(text, new)) <= 2 * len(changes) + 2


# --------------------------------------------------------------------------- verdicts, undecided sets, alternatives

UNDECIDING = ["--timeout", str(int(HOUR)), "--rlimit", "20000"]  # too few z3 resources to decide most conditions


def fresh_process(*argv):
    """The console script in a new interpreter: the same cold start for `check` and `repair`."""
    done = subprocess.run([sys.executable, "-m", "prunecheck.checker", *argv], capture_output=True, text=True,
                          timeout=HANG_GUARD)
    return done.returncode, done.stdout


def test_repair_reports_each_condition_with_check_s_verdict_and_an_undecided_set_is_not_refuted(tmp_path):
    seed = str(hosted(tmp_path, "seed_flawed.yaml"))
    _, checked_doc = fresh_process("check", seed, *UNDECIDING, "--format", "json")
    checked = {c: r["verdict"] for c, r in json.loads(checked_doc)["policies"][0]["conditions"].items()}
    assert "unknown" in checked.values() and "violated" in checked.values()  # else the test shows nothing
    code, stdout = fresh_process("repair", seed, *UNDECIDING, "--format", "json")
    doc = json.loads(stdout)
    assert doc["original"]["conditions"] == checked
    # The real repair cannot be decided at these bounds: it is reported as undecided (exit 3), not as refuted,
    # and no set containing it is passed off as the repair.
    assert (code, doc["status"], doc["changes"]) == (3, "unknown", [])
    assert [[c["key"] for c in u["changes"]] for u in doc["undecided"]] == [["records"]]
    assert doc["undecided"][0]["unknown"] and doc["reason"].startswith("no proved repair within the bounds")
    code, text = fresh_process("repair", seed, *UNDECIDING)
    head = text.splitlines()[0]
    assert code == 3 and head.endswith("(" + ", ".join(f"{c} {v}" for c, v in checked.items()) + ")")
    assert "raise --timeout or --rlimit" in text and "deployment: set records to undo_region (" in text


MODEL_WRITTEN = """name: recency-thresholds
description: Drop spans that have gone stale; keep anything read recently or pinned.
evict: not pinned and kind != "record" and (idle > 50 or (recency < 0.02 and frequency < 0.05) or tokens > 1500)
budget: 64000
deployment:
  records: window
  pins: self
  audit: policy
"""


def test_the_budget_is_not_dropped_to_get_past_a_set_that_keeps_it_and_is_undecided(tmp_path):
    # Under a host that truncates: without one, dropping the budget (the policy's own truncation) is itself a repair.
    path = hosted(tmp_path, "recency_thresholds.yaml", MODEL_WRITTEN)
    # At this resource limit moving the records out is hard to decide, and the same move with the budget dropped
    # is easier: the search used to return the latter (exit 0) as if the budget had to go.
    code, stdout = fresh_process("repair", str(path), "--timeout", str(int(HOUR)), "--rlimit", "66000",
                                 "--format", "json")
    doc = json.loads(stdout)
    assert all(c["kind"] != "drop_budget" for c in doc["changes"])
    if doc["status"] == "unknown":
        assert code == 3 and [[c["key"] for c in u["changes"]] for u in doc["undecided"]] == [["records"]]
    else:
        assert (code, doc["status"]) == (0, "repaired")


def test_candidates_get_the_verdicts_check_gives_them():
    policy = load_policy(EXAMPLES / "seed_flawed.yaml", DeploymentOverride((("host_truncation", "on"),)))
    bounds = CheckOptions(timeout=HOUR, rlimit=BOUNDS["rlimit"])
    # proved; C2 and C4 still violated (a truncating host's budget takes the records the text excludes)
    for changes in ((flip("records", "undo_region"),), (RECORDS,)):
        candidate = repaired_policy(policy, changes, "yaml")
        mine, theirs = check_candidate(candidate, bounds), check(candidate, CheckOptions(**BOUNDS))
        assert [(r.condition, r.verdict, r.trace) for r in mine.results] == \
               [(r.condition, r.verdict, r.trace) for r in theirs.results]
        assert (mine.policy_hash, mine.depth, mine.spans) == (theirs.policy_hash, theirs.depth, theirs.spans)
    assert {r.verdict for r in mine.results} == {Verdict.HOLDS, Verdict.VIOLATED}


def test_a_superset_of_the_repair_is_not_named_an_alternative_though_proved(tmp_path):
    path = tmp_path / "self_certified_budget.yaml"  # budget 2000, records: window, audit: policy; no tool calls
    path.write_text(first_seed((EXAMPLES / path.name).read_text(), path.name, tool_calls="off"))
    trusted = prunecheck.load_policy(path, trust_policy_deployment=True)  # its section believed: repair may change it
    result = prunecheck.repair(trusted, alternatives=64, **BOUNDS)
    records = flip("records", "undo_region")
    assert result.status == "repaired" and result.changes == (records,) and result.undecided == ()
    superset = repaired_policy(load_policy(path), (records, DROP_BUDGET), "yaml")
    assert all(r.verdict == Verdict.HOLDS for r in check_candidate(superset, CheckOptions(**BOUNDS)).results)
    # It drops the budget on top of the repair: it names nothing new. Dropping the budget alone is a repair of its own
    # (no host truncates, SPEC §2, so without the policy's truncation records stay: the policy never evicts them).
    assert result.alternatives == ((DROP_BUDGET,),)


def test_alternatives_not_found_are_said_in_one_line_with_why():
    # The file alone, its section believed (cli trusts it): its `undo: blind` is repair's to change.
    code, out, _ = cli(str(EXAMPLES / "blind_undo.yaml"), "--no-config", "--alternatives", "2")
    (line,) = [line for line in out.splitlines() if line.startswith("alternatives: ")]
    assert code == 0 and "also proved" not in out
    assert line.startswith("alternatives: 0 of the 2 alternatives asked for found; the ")
    assert " change sets after the repair: " in line and "containing a set already proved or undecided" in line
    code, out, _ = cli(str(EXAMPLES / "blind_undo.yaml"), "--no-config", "--alternatives", "2", "--format", "json")
    assert json.loads(out)["alternatives_missing"] == line.removeprefix("alternatives: ")
    code, out, _ = cli(str(EXAMPLES / "blind_undo.yaml"), "--no-config")  # none asked for: nothing to say
    assert code == 0 and "alternatives:" not in out


def test_the_api_reuses_check_s_report_and_refuses_one_of_other_bounds():
    path = EXAMPLES / "blind_undo.yaml"
    trusted = prunecheck.load_policy(path, no_config=True, trust_policy_deployment=True)  # its section believed
    report = prunecheck.check(trusted, **BOUNDS)
    result = prunecheck.repair(trusted, report=report, **BOUNDS)
    assert result.original is report and result.changes == (PAIRS, flip("undo", "versioned"), TOMBSTONE, DOWNGRADE)
    with pytest.raises(ValueError, match="not check's report"):
        prunecheck.repair(trusted, report=prunecheck.check(trusted, depth=3, **BOUNDS), **BOUNDS)
    # Judged under its operator's configuration (undo: blind is the operator's fact), no deployment change is made.
    operated = prunecheck.repair(path, **BOUNDS)
    assert operated.changes is None or all(change.kind != "deployment" for change in operated.changes)


def test_repair_help_says_what_alternatives_do_and_names_exit_code_3():
    out = io.StringIO()
    assert main(["repair", "--help"], out, io.StringIO(), extra_commands={"repair": (add_parser, run_repair)}) == 0
    flat = " ".join(out.getvalue().split())
    assert "list up to N other proved repairs, none containing an earlier one" in flat
    assert "keeping the budget first" in flat and "3 no repair proved" in flat
