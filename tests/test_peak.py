"""The recovery set's peak size (--recovery-peak): bounded, pinned to runtime runs, the same count by both engines."""

import io
import json

import jsonschema
import pytest

from prunecheck.checker.cli import main
from prunecheck.checker.engines.explicit import domains_for
from prunecheck.checker.engines.peak import explicit_peak, recovery_set, reservation, symbolic_peak
from prunecheck.checker.language.loader import parse_policy_text
from prunecheck.checker.outputs.report_schema import report_schema
from prunecheck.spec.policy import Deployment
from prunecheck.spec.runtime import Edit, State, step

from conftest import CLI_BOUNDS, HOUR, RLIMIT

DEPTH, SPANS = 3, 5  # room for two edits of one appended span: two records at once
POLICY = parse_policy_text('name: t\nevict: kind == "tool_output" and idle > 4\n', "t.yaml")
# The first seed's records: a destroy's holds its target verbatim (by default it keeps only the id, one token).
VERBATIM = parse_policy_text('name: t\nevict: kind == "tool_output" and idle > 4\n', "t.yaml",
                             Deployment(evidence="off", destroy_record="verbatim"))


def replayed(policy, actions) -> State:
    state = State()
    for action in actions:
        state = step(policy, state, action, SPANS).after
    return state


def size(state: State) -> tuple:
    return len(recovery_set(state)), sum(span.tokens for span in reservation(state))


def test_an_agent_that_only_transforms_keeps_one_token_per_record():
    peak = explicit_peak(POLICY, DEPTH, SPANS, domains_for(POLICY), HOUR, modes=("transform",))
    # Each record and its rationale hold one token: the seed's reservation is two tokens per record.
    assert peak.complete and peak.records == 2 and peak.tokens == 2 * peak.records
    assert all(a.mode == "transform" for a in peak.tokens_witness if isinstance(a, Edit))


def test_a_destroy_record_is_as_large_as_its_target():
    domains = domains_for(VERBATIM)
    peak = explicit_peak(VERBATIM, DEPTH, SPANS, domains, HOUR)
    final = replayed(VERBATIM, peak.tokens_witness)
    largest = max(recovery_set(final), key=lambda span: span.tokens)
    (edit,) = [e for e in final.edits if e.record == largest.id]
    assert edit.mode == "destroy" and largest.tokens == max(domains.tokens)
    assert peak.tokens == peak.records * (max(domains.tokens) + 1)  # each record's rationale holds one token
    default = explicit_peak(POLICY, DEPTH, SPANS, domains_for(POLICY), HOUR)
    assert default.tokens == 2 * default.records == 2 * peak.records  # an id-only record holds one token too


def test_the_figures_are_reached_by_the_runtime_runs_the_peak_names():
    peak = explicit_peak(POLICY, DEPTH, SPANS, domains_for(POLICY), HOUR)
    assert len(peak.witness) <= DEPTH and len(peak.tokens_witness) <= DEPTH
    assert size(replayed(POLICY, peak.witness))[0] == peak.records
    assert size(replayed(POLICY, peak.tokens_witness))[1] == peak.tokens


@pytest.mark.parametrize("depth, spans", [(2, 5), (3, 5), (3, 3)])
def test_the_symbolic_record_count_is_the_explicit_one(depth, spans):
    domains = domains_for(POLICY)
    explicit = explicit_peak(POLICY, depth, spans, domains, HOUR)
    symbolic = symbolic_peak(POLICY, depth, spans, domains.tokens, HOUR, RLIMIT)
    assert symbolic.complete and symbolic.tokens is None and symbolic.queries >= 1
    assert symbolic.records == explicit.records


def _check(tmp_path, *extra):
    path = tmp_path / "t.yaml"
    path.write_text('name: t\nevict: kind == "tool_output" and idle > 4\n')
    out, err = io.StringIO(), io.StringIO()
    code = main(["check", str(path), "--depth", str(DEPTH), "--spans", str(SPANS), "--only", "C1", "--no-prove",
                 "--no-cache", *CLI_BOUNDS, *extra], out, err)
    assert code in (0, 3), err.getvalue()
    return out.getvalue()


def test_the_peak_is_off_by_default_and_labelled_bounded_when_asked(tmp_path):
    assert "recovery set" not in _check(tmp_path)
    text = _check(tmp_path, "--recovery-peak", "--engine", "explicit")
    peak = explicit_peak(POLICY, DEPTH, SPANS, domains_for(POLICY), HOUR)
    assert text.splitlines()[-1] == (f"  recovery set: at most {peak.records} records, the seed's cost: "
                                     f"{peak.tokens} tokens reserved for records and rationales (depth "
                                     f"{DEPTH}, {SPANS} spans, tokens {{1, 2}}; bounded, not a proof)")


def test_the_json_peak_is_in_the_schema(tmp_path):
    assert "recovery_peak" not in json.loads(_check(tmp_path, "--format", "json"))["policies"][0]
    doc = json.loads(_check(tmp_path, "--format", "json", "--recovery-peak"))
    jsonschema.Draft202012Validator(report_schema()).validate(doc)
    peak = doc["policies"][0]["recovery_peak"]
    assert peak["engine"] == "bmc" and peak["tokens"] is None and peak["complete"] is True
    assert peak["bounds"] == {"depth": DEPTH, "spans": SPANS, "tokens": None}
    assert peak["summary"].endswith("bounded, not a proof)")


def test_the_html_header_shows_the_peak(tmp_path):
    page = _check(tmp_path, "--format", "html", "--recovery-peak")
    assert '<span class="peak">recovery set: at most ' in page and "bounded, not a proof" in page


def test_a_query_stopped_at_its_limit_gives_a_figure_reached_never_at_most():
    from prunecheck.checker.outputs.render import peak_text

    peak = symbolic_peak(POLICY, DEPTH, SPANS, None, HOUR, rlimit=1)
    assert not peak.complete
    assert peak_text(peak).startswith(f"reached {peak.records} records, the seed's cost (its token reservation for "
                                      "records and rationales) not counted, the search stopped at a limit")
