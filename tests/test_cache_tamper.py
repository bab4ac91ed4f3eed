"""An attacker who can write the report cache cannot make `check` believe a verdict its evidence does not support:
every tampered entry is rejected on stderr, counted in the summary, re-solved and overwritten."""

import hashlib
import io
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
import z3

from prunecheck.checker.commands.batch import batch_item
from prunecheck.checker.options import CheckOptions
from prunecheck.checker.outputs.cache import FORMAT, CacheStatus, cache_key
from prunecheck.checker.engines.certificate_model import Encoding
from prunecheck.checker.outputs.reason_doc import reason_json
from prunecheck.checker.outputs.reasons import reason_text
from prunecheck.checker.language.document import policy_document, policy_hash
from prunecheck.checker.cli import main
from prunecheck.checker.language.loader import load_policy
from prunecheck.checker.result import Clause, Found, Method, Reason, Verdict

from conftest import BOUNDS, CLI_BOUNDS, EXAMPLES

# Depth and spans bound every solver here (the tests never rely on a time limit).
OPTIONS = CheckOptions(depth=6, spans=4, trust_policy_deployment=True, **BOUNDS)  # human-authored test files
ARGS = ["--depth", "6", "--spans", "4", "--trust-policy-deployment", *CLI_BOUNDS]
FLAWED_VIOLATED = ("C1", "C2", "C4", "T1")  # T1: a role-blind predicate splits pairs (ADR 0033)
# The copies checked here keep no evidence: the cache's checks are the subject, and the second seed's defaults (M1, J1
# violated by seed_flawed) are tested elsewhere.
EVIDENCE_OFF = 'deployment:\n  evidence: "off"\n'


@dataclass(frozen=True)
class Clean:
    """A cache holding genuine entries for seed_flawed and seed_safe_design, and what they say."""

    root: Path
    flawed: Path  # a directory holding only seed_flawed.yaml
    safe: Path
    cache: Path
    flawed_entry: dict
    safe_entry: dict
    fresh: object  # seed_flawed's freshly solved report


def _entry_path(cache: Path, settings: dict) -> Path:
    key = cache_key(settings)
    return cache / f"v{FORMAT}" / key[:2] / f"{key}.json"


def _settings(policy_file: Path) -> dict:
    return OPTIONS.settings(policy_hash(load_policy(policy_file)))


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    root = tmp_path_factory.mktemp("tamper")
    dirs = {}
    for name in ("seed_flawed.yaml", "seed_safe_design.yaml"):
        dirs[name] = root / name.split(".")[0]
        dirs[name].mkdir()
        (dirs[name] / name).write_text((EXAMPLES / name).read_text().replace("deployment:\n", EVIDENCE_OFF))
    cache = root / "cache"
    flawed_file, safe_file = (dirs[name] / name for name in ("seed_flawed.yaml", "seed_safe_design.yaml"))
    fresh = batch_item(str(flawed_file), OPTIONS, str(cache))
    safe = batch_item(str(safe_file), OPTIONS, str(cache))
    assert fresh.report.verdict == Verdict.VIOLATED and safe.report.verdict == Verdict.HOLDS
    entries = [json.loads(_entry_path(cache, _settings(f)).read_text()) for f in (flawed_file, safe_file)]
    return Clean(root, dirs["seed_flawed.yaml"], dirs["seed_safe_design.yaml"], cache, entries[0], entries[1],
                 fresh.report)


def _flawed_file(clean: Clean) -> Path:
    return clean.flawed / "seed_flawed.yaml"


def _reseal(entry: dict) -> dict:
    """What an attacker can always do: make the checksum match the edited report."""
    doc = entry["report"]
    entry["sha256"] = hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return entry


def _claim_holds(entry: dict, certificates: dict) -> dict:
    """seed_flawed's violated conditions relabelled `holds`, with the given certificate per condition (if any)."""
    report, proved = entry["report"], Reason((Clause(Method.INDUCTION, Found.PROVED),))
    for condition in FLAWED_VIOLATED:
        result = report["conditions"][condition]
        # The structured reason forged to match, as whoever can write the entry can.
        result.update(verdict="holds", depth=None, engine="induction", reason=reason_text(proved))
        entry["reasons"][condition] = reason_json(proved)
        result.pop("trace", None)
        if condition in certificates:
            result["certificate"] = certificates[condition]
    report["verdict"] = "holds"
    return entry


def _certificate(entry: dict, condition: str) -> dict:
    return json.loads(json.dumps(entry["report"]["conditions"][condition]["certificate"]))  # a copy to edit


def flip_without_certificate(clean):
    return _claim_holds(json.loads(json.dumps(clean.flawed_entry)), {})


def flip_with_certificate_of_another_policy(clean):
    return _claim_holds(json.loads(json.dumps(clean.flawed_entry)),
                        {c: clean.safe_entry["report"]["conditions"][c]["certificate"] for c in FLAWED_VIOLATED})


def flip_with_relabelled_certificate_of_another_policy(clean):
    policy = load_policy(_flawed_file(clean))
    forged = {}
    for condition in FLAWED_VIOLATED:
        document = _certificate(clean.safe_entry, condition)
        document.update(policy=policy_document(policy), policy_hash=policy_hash(policy))
        forged[condition] = document
    return _claim_holds(json.loads(json.dumps(clean.flawed_entry)), forged)


def flip_with_certificate_for_another_condition(clean):
    # seed_flawed's own, genuine proofs of C3 and P1, offered for the conditions it violates.
    own = clean.flawed_entry["report"]["conditions"]
    forged = {"C1": own["C3"]["certificate"], "C2": own["P1"]["certificate"], "C4": own["C3"]["certificate"],
              "T1": own["P1"]["certificate"]}
    return _claim_holds(json.loads(json.dumps(clean.flawed_entry)), forged)


def flip_with_relabelled_certificate_for_another_condition(clean):
    forged = {}
    for condition in FLAWED_VIOLATED:
        document = _certificate(clean.flawed_entry, "C3")
        document["condition"] = condition
        forged[condition] = document
    return _claim_holds(json.loads(json.dumps(clean.flawed_entry)), forged)


def flip_with_circular_assumption(clean):
    policy = load_policy(_flawed_file(clean))
    forged = {}
    for condition in FLAWED_VIOLATED:
        encoding = Encoding(policy, condition, True, assume=(condition,))
        document = _certificate(clean.flawed_entry, "C3")
        document.update(condition=condition, assume=[condition], model_smt2=encoding.model_text(),
                        invariant_smt2=encoding.invariant_text(z3.BoolVal(True)))
        forged[condition] = document
    return _claim_holds(json.loads(json.dumps(clean.flawed_entry)), forged)


def trace_cut_short(clean):
    entry = json.loads(json.dumps(clean.flawed_entry))
    result = entry["report"]["conditions"]["C1"]
    result["trace"] = result["trace"][:-1]
    result["depth"] = len(result["trace"])
    return entry


def trace_that_violates_before_its_end(clean):
    entry = json.loads(json.dumps(clean.flawed_entry))
    result = entry["report"]["conditions"]["C1"]
    result["trace"].append({"action": "audit", "args": {}})
    result["depth"] = len(result["trace"])
    return entry


def trace_with_a_huge_repetition(clean):
    """A forged count far beyond any bound: the runtime applies it at once, so checking it costs nothing."""
    entry = json.loads(json.dumps(clean.flawed_entry))
    result = entry["report"]["conditions"]["C1"]
    result["trace"].append({"action": "audit", "args": {"times": 10 ** 900}})
    result["depth"] = len(result["trace"])
    return entry


def trace_with_no_repetition(clean):
    entry = json.loads(json.dumps(clean.flawed_entry))
    result = entry["report"]["conditions"]["C1"]
    result["trace"].append({"action": "audit", "args": {"times": 0}})
    result["depth"] = len(result["trace"])
    return entry


def trace_with_another_action(clean):
    entry = json.loads(json.dumps(clean.flawed_entry))
    entry["report"]["conditions"]["C2"]["trace"][1]["args"]["target"] = 3
    return entry


def depth_of_a_result(clean):
    entry = json.loads(json.dumps(clean.flawed_entry))
    entry["report"]["conditions"]["C1"]["depth"] = 5
    return entry


def report_policy_hash(clean):
    entry = json.loads(json.dumps(clean.flawed_entry))
    entry["report"]["policy_hash"] = clean.safe_entry["report"]["policy_hash"]
    return entry


def report_depth(clean):
    entry = json.loads(json.dumps(clean.flawed_entry))
    entry["report"]["depth"] = 12
    return entry


def report_spans(clean):
    entry = json.loads(json.dumps(clean.flawed_entry))
    entry["report"]["spans"] = 6
    return entry


def report_conditions(clean):
    entry = json.loads(json.dumps(clean.flawed_entry))
    for condition in FLAWED_VIOLATED:
        del entry["report"]["conditions"][condition]
    entry["report"]["verdict"] = "holds"
    return entry


def entry_settings(clean):
    entry = json.loads(json.dumps(clean.flawed_entry))
    entry["settings"]["depth"] = 2
    return entry


def another_policys_report(clean):
    return json.loads(json.dumps(clean.safe_entry))


def another_policys_report_relabelled(clean):
    entry = json.loads(json.dumps(clean.safe_entry))
    entry["settings"] = clean.flawed_entry["settings"]
    for key in ("policy", "policy_hash", "source"):
        entry["report"][key] = clean.flawed_entry["report"][key]
    return entry


def certificate_as_text(clean):
    """The certificate as JSON text inside the JSON (the report format before issue 13): not an object."""
    entry = json.loads(json.dumps(clean.flawed_entry))
    result = entry["report"]["conditions"]["C3"]
    result["certificate"] = json.dumps(result["certificate"], indent=1) + "\n"
    return entry


TAMPERINGS = [flip_without_certificate, certificate_as_text, flip_with_certificate_of_another_policy,
              flip_with_relabelled_certificate_of_another_policy, flip_with_certificate_for_another_condition,
              flip_with_relabelled_certificate_for_another_condition, flip_with_circular_assumption,
              trace_cut_short, trace_that_violates_before_its_end, trace_with_a_huge_repetition,
              trace_with_no_repetition, trace_with_another_action, depth_of_a_result,
              report_policy_hash, report_depth, report_spans, report_conditions, entry_settings,
              another_policys_report, another_policys_report_relabelled]


def _tampered_cache(clean: Clean, tmp_path: Path, entry: dict, reseal: bool = True) -> Path:
    cache = tmp_path / "cache"
    shutil.copytree(clean.cache, cache)
    path = _entry_path(cache, _settings(_flawed_file(clean)))
    path.write_text(json.dumps(_reseal(entry) if reseal else entry, sort_keys=True), encoding="utf-8")
    return cache


def _run(clean: Clean, cache: Path) -> tuple:
    out, err = io.StringIO(), io.StringIO()
    code = main(["check", str(clean.flawed), "--cache", str(cache)] + ARGS, out, err)
    said = [line for line in err.getvalue().splitlines() if line.startswith("prunecheck:")]
    return code, out.getvalue().splitlines(), said


def _assert_rejected_and_resolved(clean: Clean, cache: Path) -> None:
    code, out, said = _run(clean, cache)
    assert code == 1
    assert out[-1] == "1 policy: 1 violated; 0 from the cache; 1 cache entry rejected and re-solved"
    assert len(said) == 1 and said[0].startswith(f"prunecheck: warning: {_flawed_file(clean)}: cache entry rejected")
    # The fresh report replaced the entry: the next run reads it, verified, and it is the freshly solved one.
    again = batch_item(str(_flawed_file(clean)), OPTIONS, str(cache))
    assert again.cache is CacheStatus.HIT and again.report == clean.fresh
    for condition in FLAWED_VIOLATED:
        assert again.report.result(condition).verdict == Verdict.VIOLATED


@pytest.mark.parametrize("tamper", TAMPERINGS, ids=lambda f: f.__name__)
def test_a_tampered_entry_is_rejected_and_resolved(clean, tmp_path, tamper):
    cache = _tampered_cache(clean, tmp_path, tamper(clean))
    item = batch_item(str(_flawed_file(clean)), OPTIONS, str(cache))
    assert item.cache is CacheStatus.REJECTED and item.rejection and "\n" not in item.rejection
    assert item.report == clean.fresh
    assert all(item.report.result(c).verdict != Verdict.HOLDS for c in FLAWED_VIOLATED)
    _tampered_cache(clean, tmp_path / "again", tamper(clean))
    _assert_rejected_and_resolved(clean, tmp_path / "again" / "cache")


@pytest.mark.parametrize("reason_part, tamper", [
    ("certificate", flip_without_certificate),
    ("certificate", flip_with_certificate_of_another_policy),
    ("certificate", flip_with_certificate_for_another_condition),
    ("certificate is not an object", certificate_as_text),
    ("does not replay", trace_cut_short),
    ("does not replay", trace_that_violates_before_its_end),
    ("does not replay", trace_with_a_huge_repetition),
    ("times must be an integer", trace_with_no_repetition),
    ("depth", depth_of_a_result),
    ("another policy", report_policy_hash),
    ("bounds", report_spans),
    ("settings", entry_settings),
])
def test_the_rejection_names_what_failed(clean, tmp_path, reason_part, tamper):
    cache = _tampered_cache(clean, tmp_path, tamper(clean))
    item = batch_item(str(_flawed_file(clean)), OPTIONS, str(cache))
    assert item.cache is CacheStatus.REJECTED and reason_part in item.rejection


def test_a_flip_without_resealing_is_caught_by_the_checksum(clean, tmp_path):
    cache = _tampered_cache(clean, tmp_path, flip_without_certificate(clean), reseal=False)
    item = batch_item(str(_flawed_file(clean)), OPTIONS, str(cache))
    assert item.cache is CacheStatus.REJECTED and "checksum" in item.rejection
    assert item.report == clean.fresh


@pytest.mark.parametrize("content", [b"", b"{", b"\x00\xff", b"[]", b"{}"], ids=repr)
def test_an_unreadable_entry_is_rejected(clean, tmp_path, content):
    cache = tmp_path / "cache"
    shutil.copytree(clean.cache, cache)
    _entry_path(cache, _settings(_flawed_file(clean))).write_bytes(content)
    item = batch_item(str(_flawed_file(clean)), OPTIONS, str(cache))
    assert item.cache is CacheStatus.REJECTED and item.report == clean.fresh


def test_an_untampered_warm_run_reads_the_cache(clean, tmp_path):
    cache = tmp_path / "cache"
    shutil.copytree(clean.cache, cache)
    code, out, said = _run(clean, cache)
    assert code == 1 and said == []
    assert out[-1] == "1 policy: 1 violated; 1 from the cache"
    out, err = io.StringIO(), io.StringIO()
    assert main(["check", str(clean.safe), "--cache", str(cache)] + ARGS, out, err) == 0
    assert out.getvalue().splitlines()[-1] == "1 policy: 1 holds; 1 from the cache"
    assert "rejected" not in err.getvalue()


def flip_with_forged_certificate_for_this_policy(clean):
    """Everything about the certificate is right except its proof: `Inv` is `true`, followed by `(assert false)`."""
    policy = load_policy(_flawed_file(clean))
    forged = {}
    for condition in FLAWED_VIOLATED:
        encoding = Encoding(policy, condition, True)
        document = _certificate(clean.flawed_entry, "C3")
        document.update(condition=condition, model_smt2=encoding.model_text(),
                        invariant_smt2=encoding.invariant_text(z3.BoolVal(True)) + "(assert false)\n")
        forged[condition] = document
    return _claim_holds(json.loads(json.dumps(clean.flawed_entry)), forged)


# The cache believes what checker.certificate.confirm_certificate confirms; this branch carries a stub of it whose
# re-check still splices the invariant into the script (issue 11 item 1 replaces it with a parsing checker).
def test_a_forged_certificate_for_this_very_policy_is_not_believed(clean, tmp_path):
    cache = _tampered_cache(clean, tmp_path, flip_with_forged_certificate_for_this_policy(clean))
    item = batch_item(str(_flawed_file(clean)), OPTIONS, str(cache))
    assert item.cache is CacheStatus.REJECTED and item.report == clean.fresh


@pytest.mark.parametrize("kind", ["fifo", "directory", "device"])
def test_an_entry_that_is_not_a_regular_file_is_rejected_without_blocking(clean, tmp_path, kind):
    import os

    cache = tmp_path / "cache"
    shutil.copytree(clean.cache, cache)
    entry = _entry_path(cache, _settings(_flawed_file(clean)))
    entry.unlink()
    {"fifo": lambda: os.mkfifo(entry), "directory": entry.mkdir,
     "device": lambda: entry.symlink_to("/dev/zero")}[kind]()
    item = batch_item(str(_flawed_file(clean)), OPTIONS, str(cache))
    assert item.cache is CacheStatus.REJECTED and item.report == clean.fresh


def _c1_reason(clean, edit) -> dict:
    """seed_flawed's entry with C1's structured reason (a bounded search's violation) edited."""
    entry = json.loads(json.dumps(clean.flawed_entry))
    reasons = entry["reasons"]
    reasons["C1"] = edit(reasons["C1"], reasons["C1"]["clauses"][0])
    return entry


REASON_EDITS = {
    "not an object": lambda r, c: "violated",
    "a missing key": lambda r, c: {k: v for k, v in r.items() if k != "note"},
    "an unknown clause key": lambda r, c: c.update(colour=1) or r,
    "an unknown finding": lambda r, c: c.update(found="maybe") or r,
    "a count that is a boolean": lambda r, c: c.update(depth=True) or r,
    "a negative count": lambda r, c: c.update(spans=-1) or r,
    "a violation without its length": lambda r, c: c.pop("actions") and r,
    "a proof engine's violation": lambda r, c: c.update(engine="spacer") or r,
    "solver words with control characters": lambda r, c: c.update(solver={"stop": "it answered unknown",
                                                                          "words": "\x1b[2J"}) or r,
    "neither clauses nor parts": lambda r, c: r.update(clauses=[]) or r,
    "advice naming no option": lambda r, c: r.update(advice=[{"option": "--rm", "value": 1,
                                                              "why": "more solver time"}]) or r,
    "a deep nesting": lambda r, c: r.update(clauses=[[[[[]]]]]) or r,
    "facts that render otherwise": lambda r, c: c.update(spans=c["spans"] + 1) or r,
}


@pytest.mark.parametrize("edit", REASON_EDITS.values(), ids=REASON_EDITS.keys())
def test_a_malformed_structured_reason_is_a_rejected_entry(clean, tmp_path, edit):
    cache = _tampered_cache(clean, tmp_path, _c1_reason(clean, edit))
    item = batch_item(str(_flawed_file(clean)), OPTIONS, str(cache))
    assert item.cache is CacheStatus.REJECTED and "C1: " in item.rejection and "\n" not in item.rejection
    assert item.report == clean.fresh


def test_a_reason_text_that_its_structure_does_not_render_is_rejected(clean, tmp_path):
    entry = json.loads(json.dumps(clean.flawed_entry))
    entry["report"]["conditions"]["C1"]["reason"] += " (checked by hand)"
    item = batch_item(str(_flawed_file(clean)), OPTIONS, str(_tampered_cache(clean, tmp_path, entry)))
    assert item.cache is CacheStatus.REJECTED and "does not render as the report's text" in item.rejection
