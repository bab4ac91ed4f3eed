"""CI controls: --fail-on, accepted findings (the policy's `accept:` and baseline files), their SARIF suppressions, and
the policy's `expect:` table as a contract."""

import io
import json
from pathlib import Path

import jsonschema
import pytest

from prunecheck.checker.outputs.accept import Baseline, baseline_document, load_baseline, settle, triage
from prunecheck.checker.commands.batch import BatchItem, exit_code
from prunecheck.checker.findings.expect import Compared
from prunecheck.checker.language.document import policy_hash
from prunecheck.checker.cli import main
from prunecheck.checker.language.loader import parse_policy_text
from prunecheck.checker.outputs.report_schema import report_schema
from prunecheck.checker.result import Clause, Expectation, Found, Method, Reason, Report, Result, Verdict
from prunecheck.spec.errors import PolicySyntaxError
from prunecheck.spec.policy import Loc

from conftest import CLI_BOUNDS, EXAMPLES

SARIF_SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-2.1.0-rtm.5.json").read_text(encoding="utf-8"))
SEED = (EXAMPLES / "seed_flawed.yaml").read_text(encoding="utf-8")
ACCEPT_C1_C2 = """accept:
  - condition: C1
    reason: records are pinned by a host wrapper
  - {condition: C2, reason: "the host never imposes budgets"}
"""
FAST = ["--depth", "3", "--spans", "4", "--only", "C1,C2", *CLI_BOUNDS]


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


BOUND = Reason((Clause(Method.BMC, Found.BOUND, 1, 1, repeats=True),))


def report(*verdicts, digest="ab" * 32) -> Report:
    results = tuple(Result(c, v, None, BOUND) for c, v in zip(("C1", "C2", "C3", "C4", "P1"), verdicts))
    return Report("p", digest, "p.yaml", 3, 4, results)


# --------------------------------------------------------------------------- the policy's own accept key


def test_accept_is_parsed_with_its_location_and_is_not_part_of_the_policy_hash():
    plain = parse_policy_text(SEED, "p.yaml")
    policy = parse_policy_text(SEED + ACCEPT_C1_C2, "p.yaml")
    assert [(a.condition, a.reason, a.kind) for a in policy.accepts] == [
        ("C1", "records are pinned by a host wrapper", "inSource"),
        ("C2", "the host never imposes budgets", "inSource")]
    assert (policy.accepts[0].loc.line, policy.accepts[0].loc.col) == (SEED.count("\n") + 2, 5)
    assert policy == plain and policy_hash(policy) == policy_hash(plain)


BAD_ACCEPTS = [
    ("accept: C2\n", 1, 9, "accept must be a list"),
    ("accept:\n  - {condition: C7, reason: r}\n", 2, 17, "unknown condition `C7`"),
    ("accept:\n  - {condition: C2, reason: '   '}\n", 2, 29, "must not be blank"),
    ("accept:\n  - {condition: C2, reason: }\n", 2, 28, "accept reason is empty"),
    ("accept:\n  - {condition: C2}\n", 2, 5, "needs `reason`"),
    ("accept:\n  - {condition: C2, reason: r, until: x}\n", 2, 32, "unknown key `until`"),
    ("accept:\n  - {condition: C2, reason: a}\n  - {condition: C2, reason: b}\n", 3, 17, "C2 is accepted twice"),
]


@pytest.mark.parametrize("tail,line,col,message", BAD_ACCEPTS)
def test_a_bad_accept_entry_is_a_located_error(tail, line, col, message):
    with pytest.raises(PolicySyntaxError) as caught:
        parse_policy_text("name: p\nevict: idle > 3\n" + tail, "p.yaml")
    assert (caught.value.line - 2, caught.value.col) == (line, col) and message in caught.value.message


PY = "def evict(span, window):\n    return span.idle > 3\n"


def test_a_python_policy_accepts_with_an_accept_dict():
    policy = parse_policy_text('ACCEPT = {"C2": "the host never imposes budgets"}\n' + PY, "p.py")
    assert [(a.condition, a.reason, a.loc.line, a.loc.col) for a in policy.accepts] == [
        ("C2", "the host never imposes budgets", 1, 11)]
    assert policy_hash(policy) == policy_hash(parse_policy_text(PY, "p.py"))


@pytest.mark.parametrize("head,col,message", [
    ('ACCEPT = {"C9": "r"}', 11, "unknown condition `C9`"),
    ('ACCEPT = {"C2": "  "}', 17, "must not be blank"),
    ('ACCEPT = ["C2"]', 10, "must be a dict literal"),
    ('ACCEPT = {"C2": "a", "C2": "b"}', 22, "duplicate key `C2`"),
])
def test_a_bad_python_accept_is_a_located_error(head, col, message):
    with pytest.raises(PolicySyntaxError) as caught:
        parse_policy_text(head + "\n" + PY, "p.py")
    assert (caught.value.line, caught.value.col) == (1, col) and message in caught.value.message


# --------------------------------------------------------------------------- exit codes


EXITS = [  # (verdicts, accepted conditions, --fail-on) -> exit code
    ((Verdict.HOLDS, Verdict.HOLDS), (), Verdict.UNKNOWN, 0),
    ((Verdict.HOLDS, Verdict.UNKNOWN), (), Verdict.UNKNOWN, 3),
    ((Verdict.HOLDS, Verdict.UNKNOWN), (), Verdict.VIOLATED, 0),
    ((Verdict.VIOLATED, Verdict.UNKNOWN), (), Verdict.VIOLATED, 1),
    ((Verdict.VIOLATED, Verdict.UNKNOWN), ("C1",), Verdict.UNKNOWN, 3),
    ((Verdict.VIOLATED, Verdict.UNKNOWN), ("C1",), Verdict.VIOLATED, 0),
    ((Verdict.VIOLATED, Verdict.UNKNOWN), ("C1", "C2"), Verdict.UNKNOWN, 0),
]


@pytest.mark.parametrize("verdicts,accepted,fail_on,code", EXITS)
def test_exit_code_reads_the_worst_unaccepted_verdict_against_fail_on(verdicts, accepted, fail_on, code):
    assert exit_code([BatchItem("p.yaml", report(*verdicts), accepted=accepted)], fail_on) == code


def test_input_errors_and_checker_faults_fail_whatever_is_accepted():
    fine = BatchItem("a.yaml", report(Verdict.VIOLATED), accepted=("C1",))
    assert exit_code([fine, BatchItem("b.yaml", None, "bad")], Verdict.VIOLATED) == 2
    assert exit_code([fine, BatchItem("b.yaml", None, "died", internal=True)], Verdict.VIOLATED) == 4


# --------------------------------------------------------------------------- matching, baselines


def test_a_baseline_entry_accepts_its_verdict_or_a_milder_one_never_a_worse_one(tmp_path):
    written = report(Verdict.UNKNOWN, Verdict.VIOLATED)
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(baseline_document([(written, triage(written))])))
    baseline = load_baseline(path)
    assert [c for c, _a in triage(written, (), baseline).accepted] == ["C1", "C2"]
    worse = report(Verdict.VIOLATED, Verdict.UNKNOWN)
    assert [c for c, _a in triage(worse, (), baseline).accepted] == ["C2"]
    other = report(Verdict.UNKNOWN, Verdict.VIOLATED, digest="cd" * 32)
    assert triage(other, (), baseline).accepted == ()


def test_an_accept_that_matches_no_finding_is_stale_unless_its_condition_was_not_checked():
    policy = parse_policy_text(SEED + ACCEPT_C1_C2, "p.yaml")
    t = triage(report(Verdict.HOLDS), policy.accepts)
    assert [(a.condition, why) for a, why in t.stale] == [("C1", "C1 holds")]
    _triages, warnings = settle([(report(Verdict.HOLDS), policy.accepts)])
    assert warnings == [f"p.yaml:{SEED.count(chr(10)) + 2}:5: accept C1 matches no finding (C1 holds); remove it"]


def test_rewriting_a_baseline_keeps_the_reasons_it_had(tmp_path):
    r = report(Verdict.VIOLATED)
    doc = baseline_document([(r, triage(r))])
    doc["accepted"][0]["reason"] = "tracked in issue 7"
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc))
    new = tmp_path / "new.json"
    triages, warnings = settle([(r, ())], load_baseline(old), new)
    assert warnings == [] and json.loads(new.read_text())["accepted"][0]["reason"] == "tracked in issue 7"
    assert triages[0].acceptance("C1").source == str(new)


ENTRY = '{"fingerprint": "' + "a" * 32 + '", "condition": "C1", "verdict": "violated", "reason": "r"}'
BAD_BASELINES = [  # (text, where the error points: the first occurrence of this text, or 1:1 if None, message)
    ("[]", None, "must be a JSON object"),
    ('{"accepted": []}', None, 'needs "version": 1'),
    ('{"version": "1", "accepted": []}', '"1"', 'needs "version": 1'),
    ('{"version": 1}', None, 'needs "accepted"'),
    ('{"version": 1, "accepted": [], "x": 1}', None, "unknown key `x`"),
    ('{"version": 1, "accepted": [\n{"condition": "C1", "verdict": "violated", "reason": "r"}]}', '{"c',
     "needs `fingerprint`"),
    ('{"version": 1, "accepted": [\n' + ENTRY.replace("a" * 32, "xyz") + "]}", '"xyz"', "32 lowercase hexadecimal"),
    ('{"version": 1, "accepted": [\n' + ENTRY.replace("C1", "C6") + "]}", '"C6"', "`C6` is not one of"),
    ('{"version": 1, "accepted": [\n' + ENTRY.replace('"violated"', '"holds"') + "]}", '"holds"',
     "`holds` is not one of violated, unknown"),
    ('{"version": 1, "accepted": [\n' + ENTRY.replace('"r"', '" "') + "]}", '" "', "must not be blank"),
    ('{"version": 1, "accepted": [\n' + ENTRY.replace('"r"}', '"r", "note": 1}') + "]}", '"note"', "unknown key"),
    ('{"version": 1, "accepted": [}', "}", "invalid JSON"),
    ("", None, "empty"),
]


def position(text: str, marker) -> tuple:
    if marker is None:
        return 1, 1
    before = text[:text.index(marker)]
    return before.count("\n") + 1, len(before) - (before.rfind("\n") + 1) + 1


@pytest.mark.parametrize("text,marker,message", BAD_BASELINES)
def test_a_bad_baseline_is_a_located_one_line_error(tmp_path, text, marker, message):
    path = tmp_path / "b.json"
    path.write_text(text)
    with pytest.raises(PolicySyntaxError) as caught:
        load_baseline(path)
    assert (caught.value.line, caught.value.col) == position(text, marker) and message in caught.value.message


# --------------------------------------------------------------------------- the command line


@pytest.fixture()
def accepting(tmp_path):
    path = tmp_path / "accepting.yaml"
    path.write_text(SEED + ACCEPT_C1_C2, encoding="utf-8")
    return path


def test_accepted_findings_are_reported_keep_their_verdict_and_fail_nothing(accepting):
    code, out, err = run("check", str(accepting), *FAST)
    assert code == 0 and err == ""
    assert "C1  violated" in out and "accepted: records are pinned by a host wrapper (in the policy, " in out
    assert "verdict: violated (accepted: C1, C2)" in out
    code, out, _ = run("check", str(accepting), *FAST, "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["verdict"] == "violated"
    jsonschema.validate(doc, report_schema())
    assert [(c, d["verdict"], d["accepted"]["kind"]) for c, d in doc["policies"][0]["conditions"].items()] == [
        ("C1", "violated", "inSource"), ("C2", "violated", "inSource")]
    code, out, _ = run("check", str(accepting), *FAST, "--format", "html")
    assert code == 0 and out.count('<span class="accepted">accepted: ') == 2


def test_accepted_findings_are_suppressed_results_in_a_valid_sarif_log(accepting, monkeypatch):
    monkeypatch.chdir(accepting.parent)
    code, out, _ = run("check", accepting.name, *FAST, "--format", "sarif")
    log = json.loads(out)
    jsonschema.validate(log, SARIF_SCHEMA)
    results = log["runs"][0]["results"]
    assert code == 0 and [r["level"] for r in results] == ["error", "error"]
    (c2,) = [r for r in results if r["ruleId"] == "C2"]
    assert c2["suppressions"] == [{
        "kind": "inSource", "status": "accepted", "justification": "the host never imposes budgets",
        "location": {"physicalLocation": {"artifactLocation": {"uri": "accepting.yaml", "uriBaseId": "%SRCROOT%"},
                                          "region": {"startLine": SEED.count("\n") + 4, "startColumn": 5}}}}]


def test_fail_on_violated_lets_an_unknown_pass():
    safe = str(EXAMPLES / "seed_safe_design.yaml")
    argv = ["check", safe, "--no-prove", "--depth", "2", "--only", "C1", *CLI_BOUNDS]
    assert run(*argv)[0] == 3 and run(*argv, "--fail-on", "unknown")[0] == 3
    assert run(*argv, "--fail-on", "violated")[0] == 0
    assert run("check", str(EXAMPLES / "seed_flawed.yaml"), *FAST, "--fail-on", "violated")[0] == 1


def test_a_written_baseline_accepts_the_run_until_the_policy_changes(tmp_path):
    policies = tmp_path / "policies"
    policies.mkdir()
    policy = policies / "seed.yaml"
    policy.write_text(SEED, encoding="utf-8")
    baseline = tmp_path / "baseline.json"
    argv = ["check", str(policies), "--no-cache", *FAST]
    assert run(*argv)[0] == 1
    code, out, _ = run(*argv, "--write-baseline", str(baseline))
    entries = json.loads(baseline.read_text())["accepted"]
    assert code == 0 and [(e["condition"], e["verdict"]) for e in entries] == [("C1", "violated"), ("C2", "violated")]
    code, out, err = run(*argv, "--baseline", str(baseline), "--format", "json")
    assert code == 0 and err.count("warning") == 0
    assert json.loads(out)["policies"][0]["conditions"]["C1"]["accepted"]["kind"] == "external"
    policy.write_text(SEED.replace("0.25", "0.5"), encoding="utf-8")
    code, _, err = run(*argv, "--baseline", str(baseline))
    assert code == 1 and err.count("matches no finding (the policy changed since the baseline was written") == 2


def test_a_bad_baseline_or_baseline_path_exits_2_with_one_line(tmp_path):
    bad = tmp_path / "b.json"
    bad.write_text('{"version": 2, "accepted": []}')
    for extra in (["--baseline", str(bad)], ["--write-baseline", str(tmp_path / "missing" / "b.json")]):
        code, out, err = run("check", str(EXAMPLES / "seed_flawed.yaml"), *FAST, *extra)
        assert code == 2 and out == "" and err.count("\n") == 1, err


def test_an_empty_baseline_accepts_nothing():
    assert triage(report(Verdict.VIOLATED), (), Baseline("b.json")).accepted == ()


# --------------------------------------------------------------------------- the policy's expect table, a contract

# C1 and C2 are proved within a second (the record is never a tool output); M1 is left out by --only, X1 does not
# apply under the default refusal.
PROVED = 'name: p\nevict: kind == "tool_output" and idle > 4\n'
EXPECT_TAIL = "expect:\n  C1: violated\n  C2: holds\n  M1: violated\n  X1: holds\n"
PROVED_ONLY = ["--only", "C1,C2", *CLI_BOUNDS]

BAD_EXPECTS = [  # (file name, text, line, column, message)
    ("p.yaml", PROVED + "expect:\n  C1: hold\n", 4, 7,
     'expected verdict for C1 must be one of holds, violated, unknown, got `hold`; did you mean "holds"?'),
    ("p.yaml", PROVED + "expect:\n  Z9: holds\n", 4, 3, "expect names unknown condition `Z9` (conditions: C1, C2"),
    ("p.yaml", PROVED + "expect: {c1: holds}\n", 3, 10, 'expect names unknown condition `c1`; did you mean "C1"?'),
    ("p.json", '{"name": "p", "evict": "idle > 4", "expect": {"C1": "violate"}}', 1, 53,
     'got `violate`; did you mean "violated"?'),
    ("p.py", 'EXPECT = {"C1": "Holds"}\n' + PY, 1, 17, 'got `Holds`; did you mean "holds"?'),
    ("p.py", 'EXPECT = {"Z9": "holds"}\n' + PY, 1, 11, "EXPECT names unknown condition `Z9`"),
]


@pytest.mark.parametrize("name,text,line,col,message", BAD_EXPECTS)
def test_check_refuses_an_expect_table_the_schema_refuses(tmp_path, name, text, line, col, message):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    code, out, err = run("check", str(path), *PROVED_ONLY)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"prunecheck: error: {path}:{line}:{col}: ") and message in err, err


@pytest.fixture()
def expecting(tmp_path):
    path = tmp_path / "expecting.yaml"
    path.write_text(PROVED + EXPECT_TAIL, encoding="utf-8")
    return path


def test_a_verdict_that_differs_from_expect_is_a_finding_that_fails_the_run(expecting):
    code, out, err = run("check", str(expecting), *PROVED_ONLY)
    assert code == 1 and err == ""
    assert f"  expect C1 violated ({expecting}:4:3): differs, the check says holds\n" in out
    assert "  expect M1 violated: not compared (not checked: not selected by --only)\n" in out
    assert "  expect X1 holds: not compared (not checked: it does not apply to this policy under its deployment)\n" \
        in out
    assert "  verdict: holds; differs from the policy's expect table: C1\n" in out
    assert "expect C2" not in out  # met: nothing to say
    assert run("check", str(expecting), *PROVED_ONLY, "--fail-on", "violated")[0] == 1
    # accept covers a condition's own finding, not a broken expectation
    accepted = expecting.with_name("accepted.yaml")
    accepted.write_text(expecting.read_text() + "accept:\n  - {condition: C1, reason: r}\n", encoding="utf-8")
    assert run("check", str(accepted), *PROVED_ONLY)[0] == 1


def test_a_verdict_that_differs_from_expect_is_in_every_document(expecting, monkeypatch):
    monkeypatch.chdir(expecting.parent)
    code, out, _ = run("check", expecting.name, *PROVED_ONLY, "--format", "json")
    doc = json.loads(out)
    jsonschema.validate(doc, report_schema())
    assert code == 1 and [(e["condition"], e["expected"], e["verdict"], e["outcome"], e["line"])
                          for e in doc["policies"][0]["expect"]] == [
        ("C1", "violated", "holds", "differs", 4), ("C2", "holds", "holds", "met", 5),
        ("M1", "violated", None, "not compared", 6), ("X1", "holds", None, "not compared", 7)]
    code, out, _ = run("check", expecting.name, *PROVED_ONLY, "--format", "sarif")
    log = json.loads(out)
    jsonschema.validate(log, SARIF_SCHEMA)
    (result,) = log["runs"][0]["results"]
    assert code == 1 and result["ruleId"] == "expect" and result["level"] == "error"
    assert result["locations"][0]["physicalLocation"]["region"] == {"startLine": 4, "startColumn": 3}
    assert log["runs"][0]["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == "expect"
    code, out, _ = run("check", expecting.name, *PROVED_ONLY, "--format", "html")
    assert code == 1 and "expect C1 violated (expecting.yaml:4:3): differs, the check says holds" in out


def test_an_expect_table_is_compared_under_whatever_deployment_the_operator_gives(expecting):
    # The table claims the verdicts the file gets under the deployment it is judged under: the operator's (ADR 0037).
    deployment = expecting.with_name("deployment.yaml")
    deployment.write_text("records: undo_region\n")
    code, out, _ = run("check", str(expecting), *PROVED_ONLY, "--deployment", str(deployment))
    assert code == 1 and f"  expect C1 violated ({expecting}:4:3): differs, the check says holds\n" in out


def test_a_met_expect_table_adds_nothing_and_passes(tmp_path):
    path = tmp_path / "met.yaml"
    path.write_text(PROVED + "expect:\n  C1: holds\n", encoding="utf-8")
    code, out, _ = run("check", str(path), "--only", "C1", *CLI_BOUNDS)
    assert code == 0 and "\n  expect" not in out and "  verdict: holds\n" in out


def test_a_batch_counts_and_lists_the_verdicts_that_differ_from_expect(expecting):
    code, out, err = run("check", str(expecting.parent), "--no-cache", *PROVED_ONLY)
    assert code == 1
    assert "1 policy: 1 holds; 0 from the cache; 1 verdict not as the policy's expect table says" in out
    assert f"{expecting} C1: the expect table says violated (4:3), the check says holds" in out


def _differing(verdict: Verdict, expected: str = "holds") -> Compared:
    return Compared(Expectation("C1", expected, "p.yaml", Loc(4, 3)), verdict)


@pytest.mark.parametrize("unexpected,fail_on,code", [
    (_differing(Verdict.VIOLATED), Verdict.UNKNOWN, 1),
    (_differing(Verdict.HOLDS, "violated"), Verdict.VIOLATED, 1),
    (_differing(Verdict.UNKNOWN), Verdict.UNKNOWN, 3),
    (_differing(Verdict.UNKNOWN), Verdict.VIOLATED, 0),  # an unknown differs only as an unknown does
])
def test_exit_code_ranks_a_verdict_that_differs_from_expect_against_fail_on(unexpected, fail_on, code):
    assert exit_code([BatchItem("p.yaml", report(Verdict.HOLDS), unexpected=(unexpected,))], fail_on) == code
