"""`check --python DIR`: each counterexample as a standalone script, written alone, using only the public API."""

import ast
import re
import io
import subprocess
import sys

import pytest

import prunecheck
from prunecheck import cli

from conftest import CLI_BOUNDS, EXAMPLES, HANG_GUARD

SMALL = ["--depth", "3", "--spans", "3", "--no-prove", *CLI_BOUNDS]


def _check(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["check", *argv, *SMALL], out, err)
    return code, out.getvalue(), err.getvalue()


def _imports(script: str) -> set:
    """Every module the script imports, and every name it takes from one."""
    found = set()
    for node in ast.walk(ast.parse(script)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


@pytest.mark.parametrize("policy, deployment", [
    ("seed_flawed.yaml", None),
    ("seed_flawed.py", None),
    # The file alone holds C1 here: the script must replay the policy as checked, override included.
    ("seed_safe_design.yaml", "records: window\npins: self\n"),
])
def test_each_counterexample_is_a_standalone_script_that_reproduces_it(policy, deployment, tmp_path):
    extra = []
    if deployment:
        (tmp_path / "deployment.yaml").write_text(deployment)
        extra = ["--deployment", str(tmp_path / "deployment.yaml")]
    code, out, err = _check(str(EXAMPLES / policy), "--only", "C1", "--python", str(tmp_path / "scripts"), *extra)
    (script,) = (tmp_path / "scripts").glob("*.py")
    assert code == 1 and "import prunecheck" not in out and f"wrote {script}" in err
    text = script.read_text()
    assert {name.split(".")[0] for name in _imports(text)} <= {"sys", "prunecheck"}
    assert {name for name in _imports(text) if name.startswith("prunecheck.")} <= {
        f"prunecheck.{name}" for name in prunecheck.__all__}
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=elsewhere,
                          timeout=HANG_GUARD)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "C1 violated at the last step: reproduced" in done.stdout


def test_a_script_whose_steps_no_longer_violate_says_so_and_exits_1(tmp_path):
    _check(str(EXAMPLES / "seed_flawed.yaml"), "--only", "C1", "--python", str(tmp_path))
    (script,) = tmp_path.glob("*.py")
    text = script.read_text()
    safe = '"records": "undo_region"'
    script.write_text(text.replace('"records": "window"', safe))
    assert safe in script.read_text()
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path,
                          timeout=HANG_GUARD)
    assert done.returncode == 1 and "NOT reproduced" in done.stdout, done.stdout + done.stderr


def test_replay_is_public_and_reports_each_steps_violations():
    policy = prunecheck.load_policy(EXAMPLES / "seed_flawed.yaml")
    steps = [prunecheck.Append(kind="message", tokens=1), prunecheck.Edit(target=0, mode="transform")]
    violated = prunecheck.replay(policy, steps, spans=3)
    assert len(violated) == 2 and "C1" not in violated[0] and "C1" in violated[1]
    with pytest.raises(prunecheck.ActionRefused):
        prunecheck.replay(policy, [prunecheck.Edit(target=0, mode="transform")])


def test_python_needs_a_writable_directory(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, out, err = _check(str(EXAMPLES / "seed_flawed.yaml"), "--only", "C1", "--python", str(blocker))
    assert code == 2 and err.count("\n") == 1 and "--python" in err and "not a directory" in err


def test_policy_text_enters_the_script_only_as_literals(tmp_path):
    hostile = tmp_path / "hostile.yaml"
    hostile.write_text('name: "x\\"\\"\\"\\nraise SystemExit(3)\\n#\\u202e"\n'
                       "evict: not pinned and recency * frequency < 0.25\ndeployment:\n  records: window\n  pins: self\n")
    assert "raise SystemExit(3)" in prunecheck.load_policy(hostile).name
    code, _, _ = _check(str(hostile), "--only", "C1", "--python", str(tmp_path / "scripts"))
    (script,) = (tmp_path / "scripts").glob("*.py")
    assert code == 1 and "\u202e" not in script.read_text()
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path,
                          timeout=HANG_GUARD)
    assert done.returncode == 0 and "reproduced" in done.stdout, done.stdout + done.stderr


def _readme_script_name() -> "re.Pattern":
    """The `--python` file name the README documents, as a pattern: STEM, HASH8 and CONDITION its named groups."""
    readme = (EXAMPLES.parent.parent / "README.md").read_text(encoding="utf-8")
    bullet = readme.split("- `--python DIR` writes each counterexample", 1)[1]
    pattern = re.search(r"`DIR/([^`]+\.py)`", bullet).group(1)
    assert "HASH8" in pattern, f"the README's --python name {pattern!r} does not name the policy hash"
    regex = re.escape(pattern).replace("STEM", r"(?P<stem>\w+?)").replace("HASH8", r"(?P<hash>[0-9a-f]{8})")
    return re.compile(regex.replace("CONDITION", r"(?P<condition>[a-z][0-9])"))


def test_script_names_are_the_ones_the_readme_gives_and_two_policies_of_one_stem_keep_theirs(tmp_path):
    from prunecheck.checker.language.document import policy_hash
    from prunecheck.checker.language.operator import judged, operator_for
    from prunecheck.checker.language.loader import load_policy

    seed = (EXAMPLES / "seed_flawed.yaml").read_text()
    paths = [tmp_path / "team_a" / "policy.yaml", tmp_path / "team_b" / "policy.yaml"]
    for path, threshold in zip(paths, ("0.25", "0.5")):
        path.parent.mkdir()
        path.write_text(seed.replace("0.25", threshold))
    code, _, err = _check(*map(str, paths), "--only", "C1", "--python", str(tmp_path / "scripts"))
    scripts = sorted(p.name for p in (tmp_path / "scripts").glob("*.py"))
    assert code == 1 and len(scripts) == 2, err
    named = _readme_script_name()
    hashes = sorted(policy_hash(judged(load_policy(path), operator_for(path)))[:8] for path in paths)  # as checked
    parts = [named.fullmatch(name) for name in scripts]
    assert all(parts), (scripts, named.pattern)
    assert sorted(m["hash"] for m in parts) == hashes
    assert {(m["stem"], m["condition"]) for m in parts} == {("policy", "c1")}
