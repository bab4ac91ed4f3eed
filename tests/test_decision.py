"""The first seed's decision procedure as an output: four answers in the seed's order and the consequence."""

import io
import json

import pytest

from prunecheck.checker.cli import main
from prunecheck.checker.findings.decision import QUESTIONS, Answer, Consequence, Note, decision_of
from prunecheck.checker.findings.finding import Findings
from prunecheck.checker.result import Reason, Report, Result, Verdict
from prunecheck.spec.policy import Deployment

from conftest import CLI_BOUNDS, EXAMPLES

HOLDS, UNKNOWN, VIOLATED = Verdict.HOLDS, Verdict.UNKNOWN, Verdict.VIOLATED
SAFE = {"C1": HOLDS, "C2": HOLDS, "C3": HOLDS, "C4": HOLDS, "P1": HOLDS}


def report(verdicts: dict, **deployment) -> Report:
    """A hand-built report: one Result per condition (R1, U1 included when given) under the deployment's keys."""
    results = tuple(Result(c, v, None if v is HOLDS else 2, Reason()) for c, v in verdicts.items())
    items = tuple((k, v) for k, v in Deployment(**deployment).as_dict().items())
    return Report("p", "0" * 64, "p.yaml", 4, 3, results, deployment=items)


def answers(decision) -> dict:
    return {a.question.id: a.answer for a in decision.answers}


def test_safe_design_is_a_reversibility_mechanism():
    decision = decision_of(report({**SAFE, "R1": HOLDS}))
    assert [a.question.id for a in decision.answers] == ["Q1", "Q2", "Q3", "Q4"] == [q.id for q in QUESTIONS]
    assert answers(decision) == {"Q1": Answer.NO, "Q2": Answer.YES, "Q3": Answer.YES, "Q4": Answer.YES}
    assert decision.consequence is Consequence.MECHANISM and decision.at == ""
    assert decision.answers[3].note is Note.REFUSED
    assert ("R1", HOLDS) in {(b.condition, b.verdict) for b in decision.answers[0].because}


def test_records_in_the_window_stop_at_q1_unless_c1_and_r1_are_proved():
    decision = decision_of(report(SAFE, records="window"))  # R1 not checked: no proof that the predicate excludes
    assert decision.answers[0].answer is Answer.YES and decision.answers[0].note is Note.IN_WINDOW
    assert decision.consequence is Consequence.CACHE and decision.at == "Q1"
    assert ("records", "window") in decision.answers[0].settings
    for verdicts in ({**SAFE, "R1": VIOLATED}, {**SAFE, "R1": UNKNOWN}, {**SAFE, "C1": UNKNOWN, "R1": HOLDS}):
        assert decision_of(report(verdicts, records="window")).answers[0].answer is Answer.YES


def test_records_in_the_window_with_c1_and_r1_proved_are_structurally_excluded():
    # The seed's condition 1 accepts "a policy predicate that structurally excludes the undo region".
    decision = decision_of(report({**SAFE, "R1": HOLDS}, records="window"))
    q1 = decision.answers[0]
    assert q1.answer is Answer.NO and q1.note is Note.STRUCTURAL
    assert [str(b) for b in q1.because] == ["C1 holds", "R1 holds"]
    assert decision.consequence is Consequence.MECHANISM


def test_a_policy_that_names_the_undo_region_is_a_best_effort_cache():
    decision = decision_of(report({**SAFE, "R1": VIOLATED}))
    assert decision.answers[0].answer is Answer.YES
    assert str(decision.consequence) == "best-effort cache; reversibility claims provisional"


def test_r1_absent_is_not_asked_and_r1_unknown_is_never_an_answer():
    assert answers(decision_of(report(SAFE)))["Q1"] is Answer.NO
    decision = decision_of(report({**SAFE, "R1": UNKNOWN}))
    assert decision.answers[0].answer is Answer.UNKNOWN
    assert decision.consequence is Consequence.UNKNOWN and decision.at == "Q1"
    assert decision.reason() == "Q1 unknown (R1 unknown)"


def test_a_policy_audit_makes_the_certification_circular():
    decision = decision_of(report(SAFE, audit="policy"))
    assert answers(decision)["Q2"] is Answer.NO
    assert decision.consequence is Consequence.UNKNOWN and decision.at == "Q2"
    assert "circular" in decision.reason()


@pytest.mark.parametrize("verdict, answer", [(VIOLATED, Answer.NO), (UNKNOWN, Answer.UNKNOWN)])
def test_c4_decides_q2_and_q3(verdict, answer):
    decision = decision_of(report({**SAFE, "C4": verdict}))
    assert answers(decision)["Q2"] is answer and answers(decision)["Q3"] is answer
    assert decision.consequence is Consequence.UNKNOWN and decision.at == "Q2"


def test_q3_is_the_seed_counter_which_a_confabulated_undo_does_not_close():
    from prunecheck.checker.commands.reproduce_seed1 import SEED_POLICY, seed_run
    from prunecheck.checker.commands.observation import with_keys
    from prunecheck.checker.language.loader import parse_policy_text
    from prunecheck.spec.runtime import Undo, counter, status

    policy = with_keys(parse_policy_text(SEED_POLICY, "s.yaml"), missing_record="reconstruct", audit="independent")
    run, e1, e2, *_ = seed_run(policy)
    performed, present = counter(run.state)
    assert performed - present == 2
    run.do(Undo(e1))  # each reconstructs: the live gap closes, the counter's does not
    run.do(Undo(e2))
    assert counter(run.state) == (performed, present) and status(policy, run.state) == "reversible"
    decision = decision_of(report({**SAFE, "U1": VIOLATED}, missing_record="reconstruct"))
    assert answers(decision)["Q3"] is Answer.YES and decision.answers[2].note is Note.COUNTER
    assert decision_of(report(SAFE, audit="policy")).answers[2].note is Note.COUNTER_IN_WINDOW


def test_confabulation_is_a_silent_pass_not_a_hard_error():
    decision = decision_of(report({**SAFE, "U1": VIOLATED}, missing_record="reconstruct"))
    assert answers(decision)["Q2"] is Answer.NO and decision.at == "Q2"
    assert decision.answers[1].note is Note.SILENT_PASS
    assert decision.reason() == "Q2 no: \"a missing record is a hard error, never a silent pass\""


def test_u1_must_be_checked_where_the_deployment_reconstructs():
    decision = decision_of(report(SAFE, missing_record="reconstruct"))
    assert decision.answers[1].answer is Answer.UNKNOWN and decision.answers[1].note is Note.NOT_CHECKED
    assert [str(b) for b in decision.answers[1].because] == ["C4 holds", "U1 not checked"]
    assert answers(decision_of(report({**SAFE, "U1": HOLDS}, missing_record="reconstruct")))["Q2"] is Answer.YES


def test_merge_answers_q4_yes_merged_as_a_new_edit():
    decision = decision_of(report({**SAFE, "R1": HOLDS}, undo="merge"))
    assert decision.answers[3].answer is Answer.YES and decision.answers[3].note is Note.MERGED
    assert decision.consequence is Consequence.MECHANISM


def test_blind_undo_is_not_idempotent_under_replay():
    decision = decision_of(report({**SAFE, "C3": VIOLATED}, undo="blind"))
    assert answers(decision)["Q4"] is Answer.NO and decision.at == "Q4"
    assert decision.answers[3].note is None


def test_a_failing_condition_no_question_reads_still_makes_reversibility_unknown():
    decision = decision_of(report({**SAFE, "C2": VIOLATED}))
    assert all(a.safe for a in decision.answers)
    assert decision.consequence is Consequence.UNKNOWN and decision.at == "C2"
    assert decision.reason().startswith("C2 violated, and \"when any of these fails")


def test_conditions_not_checked_answer_unknown():
    decision = decision_of(report({"C1": HOLDS}))
    assert answers(decision) == {"Q1": Answer.NO, "Q2": Answer.UNKNOWN, "Q3": Answer.UNKNOWN, "Q4": Answer.UNKNOWN}
    assert decision.consequence is Consequence.UNKNOWN and decision.at == "Q2"
    assert decision.reason() == "Q2 unknown (C4 not checked)"


def test_findings_carry_the_decision_computed_once():
    r = report({**SAFE, "C4": VIOLATED})
    assert Findings(None, r).decision == decision_of(r)


def test_text_report_ends_with_the_decision():
    out, err = io.StringIO(), io.StringIO()
    code = main(["check", str(EXAMPLES / "kind_excludes_records.json"), "--depth", "3", "--spans", "3", "--only",
                 "C1,C3,C4", "--no-cache", *CLI_BOUNDS], out, err)
    lines = [line.strip() for line in out.getvalue().splitlines()]
    assert code in (0, 1, 3), err.getvalue()
    start = lines.index(next(line for line in lines if line.startswith("decision")))
    assert lines[start - 1].startswith("verdict:")
    assert lines[start + 1].startswith("Q1  Is the undo region inside the policy's address space?  yes, the records")
    assert lines[-1] == ("consequence: best-effort cache; reversibility claims provisional (Q1 yes: \"the policy is not "
                         "a reversibility mechanism, it is a best-effort cache\")")


def test_json_report_carries_the_decision_in_the_schema():
    import jsonschema

    from prunecheck.checker.outputs.report_schema import report_schema

    out, err = io.StringIO(), io.StringIO()
    main(["check", str(EXAMPLES / "kind_excludes_records.json"), "--depth", "3", "--spans", "3", "--only", "C1,C3",
          "--format", "json", "--no-cache", *CLI_BOUNDS], out, err)
    doc = json.loads(out.getvalue())
    jsonschema.Draft202012Validator(report_schema()).validate(doc)
    entry = doc["policies"][0]
    decision = entry["decision"]
    assert [q["id"] for q in decision["questions"]] == ["Q1", "Q2", "Q3", "Q4"]
    assert decision["questions"][0]["because"] == [{"condition": "C1", "verdict": entry["conditions"]["C1"]["verdict"]},
                                                   {"condition": "R1", "verdict": "not checked"}]
    assert decision["questions"][0]["settings"] == {"records": "window"}
    assert decision["questions"][1]["answer"] == "unknown"  # C4 was not checked: never a yes or a no
    assert decision["questions"][1]["because"] == [{"condition": "C4", "verdict": "not checked"}]
    assert decision["consequence"] == str(Consequence.CACHE) and decision["at"] == "Q1"
    broken = json.loads(out.getvalue())
    broken["policies"][0]["decision"]["questions"][0]["answer"] = "maybe"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(report_schema()).validate(broken)


def _document(fmt: str, *paths) -> str:
    out, err = io.StringIO(), io.StringIO()
    main(["check", *map(str, paths), "--depth", "3", "--spans", "3", "--only", "C1,C2,C3,C4", "--format", fmt,
          "--no-cache", *CLI_BOUNDS], out, err)
    return out.getvalue()


def test_html_report_has_the_decision_table():
    page = _document("html", EXAMPLES / "kind_excludes_records.json")
    table = page[page.index('<table class="decision">'):]
    table = table[:table.index("</table>")]
    assert [f'data-question="{q.id}"' in table for q in QUESTIONS] == [True] * 4
    assert "yes, the records live in the window the policy selects from" in table
    assert "consequence: best-effort cache; reversibility claims provisional" in page


def test_sarif_run_properties_hold_each_policy_s_decision_in_order():
    files = [EXAMPLES / "kind_excludes_records.json", EXAMPLES / "seed_safe_design.yaml"]
    properties = json.loads(_document("sarif", *files))["runs"][0]["properties"]
    decisions = properties["decision"]
    assert [d["policy"] for d in decisions] == [p["name"] for p in properties["policies"]]
    assert decisions[0]["consequence"] == str(Consequence.CACHE)
    assert decisions[1]["questions"][0]["answer"] == "no"  # the safe design keeps its records out of the window
    assert [q["id"] for q in decisions[1]["questions"]] == [q.id for q in QUESTIONS]
