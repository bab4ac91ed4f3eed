"""One document for any number of policy files: SARIF, HTML and JSON of directories, the report schema, --out names."""

import io
import json
import re
import shutil
from pathlib import Path

import jsonschema
import pytest

from prunecheck.checker.cli import main
from prunecheck.checker.outputs.report_schema import report_schema
from prunecheck.checker.result import Verdict
from prunecheck.spec.conditions import CONDITIONS

from conftest import CLI_BOUNDS, EXAMPLES

SARIF = json.loads((Path(__file__).parent / "data" / "sarif-2.1.0-rtm.5.json").read_text(encoding="utf-8"))
CHEAP = ["--depth", "3", "--spans", "3", *CLI_BOUNDS]
SEED = EXAMPLES / "seed_flawed.yaml"
SAFE = EXAMPLES / "seed_safe_design.yaml"
# The seed's policy as the first seed deployed it (no evidence, a destroy's record as large as its target): these tests
# are about documents and names, and at 3 spans the second seed's defaults leave C2 and C4 unknown (a compaction's
# ledger entry takes a slot; a 1-token record fits any host budget once its target is evicted); they are tested
# elsewhere.
FLAWED = SEED.read_text().replace("deployment:\n", 'deployment:\n  evidence: "off"\n  destroy_record: verbatim\n')


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(["check", *map(str, argv), *CHEAP], out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def policies(tmp_path):
    """A directory of three policy files, two of them sharing `name:` (one flawed, one under the host's pins and a
    host that truncates, host_truncation: on, without which the seed's policy spares records)."""
    root = tmp_path / "policies"
    root.mkdir()
    (tmp_path / "prunecheck.toml").write_text("trust-policy-deployment = true\n")  # human-authored: sections believed
    (root / "flawed.yaml").write_text(FLAWED)
    shutil.copy(SAFE, root / "safe.yaml")
    (root / "same_name.yaml").write_text(FLAWED.replace("pins: self", 'pins: host\n  host_truncation: "on"'))
    return root


def _files(root: Path) -> list:
    return sorted(str(p) for p in root.iterdir())


def _validate(doc) -> None:
    jsonschema.Draft202012Validator(report_schema()).validate(doc)


def test_a_directory_with_jobs_gives_one_valid_sarif_log_with_every_policy(policies, tmp_path):
    code, out, err = run(policies, "--jobs", "2", "--format", "sarif", "--no-prove", "--cache", tmp_path / "cache")
    assert code == 1, err
    log = json.loads(out)
    jsonschema.validate(log, SARIF)
    (sarif_run,) = log["runs"]
    located = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in sarif_run["results"]}
    assert {Path(uri).name for uri in located} == {"flawed.yaml", "safe.yaml", "same_name.yaml"}
    assert sorted(p["source"] for p in sarif_run["properties"]["policies"]) == _files(policies)


def test_a_directory_gives_one_html_page_with_a_section_per_policy(policies):
    code, out, err = run(policies, "--format", "html", "--no-cache")
    assert code == 1, err
    assert out.count("<html") == 1 and out.count('<section class="report') == 3
    for path in _files(policies):
        assert path in out
    assert "seed-recency-frequency" in out and "seed-safe-design" in out


def test_an_unreadable_file_in_a_directory_is_named_in_every_document(policies):
    (policies / "broken.yaml").write_text("name: [\n")
    for fmt in ("sarif", "html", "json"):
        code, out, err = run(policies, "--format", fmt, "--no-prove", "--no-cache")
        assert code == 2 and "broken.yaml" in err and str(policies / "broken.yaml") in out
        if fmt == "sarif":
            log = json.loads(out)
            jsonschema.validate(log, SARIF)
            (note,) = log["runs"][0]["invocations"][0]["toolExecutionNotifications"]
            assert note["level"] == "error" and note["message"]["text"].count("broken.yaml") == 1
        if fmt == "html":
            assert out.count("broken.yaml") == 1  # named once, its error already starts with it
    doc = json.loads(out)
    _validate(doc)
    assert doc["verdict"] == "error" and [p["verdict"] for p in doc["policies"]].count("error") == 1


def test_json_has_one_shape_for_one_file_and_for_a_directory(policies):
    code, single, _ = run(policies / "flawed.yaml", "--format", "json")
    assert code == 1
    code, batch, _ = run(policies, "--format", "json", "--no-cache")
    assert code == 1
    for text in (single, batch):
        doc = json.loads(text)
        _validate(doc)
        assert list(doc) == ["tool", "versions", "verdict", "policies"] and doc["verdict"] == "violated"
        assert set(doc["versions"]) == {"prunecheck", "python", "z3", "cvc5"}
    (one,) = json.loads(single)["policies"]
    same = next(p for p in json.loads(batch)["policies"] if p["source"].endswith("flawed.yaml"))
    for doc in (one, same):
        for entry in doc["conditions"].values():
            entry.pop("seconds")
        doc.pop("source")
        doc.pop("stats")  # counts depend on what the process checked before (shared lemma proofs)
    assert one == same


def test_json_validates_with_violated_holds_and_unknown_results():
    code, out, _ = run(SEED, "--format", "json")
    _validate(json.loads(out))
    (doc,) = json.loads(out)["policies"]
    verdicts = {c: e["verdict"] for c, e in doc["conditions"].items()}
    assert {"violated", "holds"} <= set(verdicts.values())
    held = next(e for e in doc["conditions"].values() if e["verdict"] == "holds")
    assert isinstance(held["certificate"], dict) and held["certificate"]["policy_hash"] == doc["policy_hash"]
    code, out, _ = run(SAFE, "--format", "json", "--no-prove")
    assert code == 3
    unknown = json.loads(out)
    _validate(unknown)
    assert {e["verdict"] for e in unknown["policies"][0]["conditions"].values()} == {"unknown"}


def test_the_schema_rejects_a_string_certificate_and_an_unknown_verdict():
    _, out, _ = run(SEED, "--format", "json", "--only", "C1,C3")
    doc = json.loads(out)
    _validate(doc)
    entry = doc["policies"][0]["conditions"]["C3"]
    entry["certificate"] = json.dumps(entry["certificate"])
    with pytest.raises(jsonschema.ValidationError):
        _validate(doc)
    doc = json.loads(out)
    doc["policies"][0]["conditions"]["C1"]["verdict"] = "probably"
    with pytest.raises(jsonschema.ValidationError):
        _validate(doc)
    doc = json.loads(out)
    doc["policies"][0]["conditions"]["C9"] = doc["policies"][0]["conditions"]["C1"]
    with pytest.raises(jsonschema.ValidationError):
        _validate(doc)


def test_the_schema_takes_its_enums_from_the_code():
    jsonschema.Draft202012Validator.check_schema(report_schema())
    properties = report_schema()["$defs"]["report"]["properties"]
    assert properties["verdict"]["enum"] == [str(v) for v in Verdict]
    assert list(properties["conditions"]["propertyNames"]["enum"]) == list(CONDITIONS)


def _written(err: str) -> list:
    return [Path(line[len("wrote "):]) for line in err.splitlines() if line.startswith("wrote ")]


def _check_out_names(out_dir: Path, err: str, expected_files: int) -> None:
    """Every file written once under a distinct name; a policy's traces and certificates share its stem, which
    carries the policy hash's first 8 hex digits."""
    written = _written(err)
    assert len(written) == len(set(written)) == len(list(out_dir.iterdir())) == expected_files
    by_stem = {}
    for path in written:
        stem, condition, kind = path.name.split(".")[:3]
        assert condition in CONDITIONS and kind in ("itf", "cert")
        doc = json.loads(path.read_text())
        meta = doc["#meta"]["prunecheck"] if kind == "itf" else doc
        by_stem.setdefault(stem, set()).add(meta["policy_hash"])
        named = re.fullmatch(r"[A-Za-z0-9_-]+-([0-9a-f]{8})(-\d+)?", stem)
        assert named and named.group(1) == meta["policy_hash"][:8]
    assert all(len(hashes) == 1 for hashes in by_stem.values())


def test_out_names_never_collide_for_policies_sharing_a_name(policies, tmp_path):
    out_dir, emitted = tmp_path / "out", tmp_path / "emitted"
    code, _, err = run(policies / "flawed.yaml", policies / "same_name.yaml", "--out", out_dir,
                       "--emit-pytest", emitted)
    assert code == 1
    _check_out_names(out_dir, err.replace(f"wrote {emitted}", "emitted "), 12)
    assert len({p.name.split(".")[0] for p in out_dir.iterdir()}) == 2
    modules = [line for line in err.splitlines() if line.startswith(f"wrote {emitted}")]
    assert len(modules) == len(set(modules)) == len(list(emitted.glob("test_*.py"))) == 5  # C1, C2, C4; C2, C4


def test_out_works_with_jobs_and_directories_even_for_identical_files(policies, tmp_path):
    (policies / "again").mkdir()
    # same content, same file name, another directory
    shutil.copy(policies / "flawed.yaml", policies / "again" / "flawed.yaml")
    out_dir = tmp_path / "out"
    code, out, err = run(policies, "--jobs", "2", "--out", out_dir, "--no-cache")
    assert code == 1 and "4 policies" in out
    # safe.yaml's T1 certificate (T1 asked of every policy, ADR 0033) and its M1, A1, J1 (evidence: on) ones
    _check_out_names(out_dir, err, 28)
    assert len({p.name.split(".")[0] for p in out_dir.iterdir()}) == 4
    sources = {json.loads(p.read_text())["#meta"]["source"] for p in out_dir.glob("*.itf.json")}
    assert sources == {str(policies / "flawed.yaml"), str(policies / "again" / "flawed.yaml"),
                       str(policies / "same_name.yaml")}
