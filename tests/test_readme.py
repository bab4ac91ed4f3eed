"""The README is run: its commands and their output, the CI snippet, the Python blocks, the set-up lines and the
option lists are checked against the tool, so that README and tool cannot drift apart unnoticed."""

import argparse
import doctest
import functools
import hashlib
import importlib.metadata
import io
import json
import re
import shlex
import shutil
from dataclasses import dataclass

import jsonschema
import pytest
import yaml

import prunecheck
from prunecheck import cli
from prunecheck.checker.cli import build_parser, builtin_commands
from prunecheck.checker.commands.frontdoor import EXIT_MEANINGS
from prunecheck.checker.language.loader import load_policy, parse_policy_text

from conftest import BOUNDS, CLI_BOUNDS, EXAMPLES, ROOT

README = ROOT / "README.md"
TEXT = README.read_text(encoding="utf-8")
# Output that may differ between two runs of the same command, replaced on both sides before comparing. Nothing else
# is: a policy hash is a function of the policy, so the README's is checked as it stands.
VOLATILE = ((re.compile(r"\b\d+(\.\d+)? ?s\b"), "<seconds>"),
            # The header's bounds name the rlimit the test adds; its query counts depend on the proofs an earlier
            # check in the same process already made (shared lemma proofs count only where asked).
            (re.compile(r"\bno rlimit\b|\brlimit \d+ per query\b"), "<rlimit>"),
            (re.compile(r"\b\d+ quer(y|ies)\b"), "<n> queries"))
# Options the README names that belong to other tools, with the tool.
OTHER_TOOLS = {"--bleeding-edge": "pre-commit autoupdate", "--compare": "tests/golden.py", "--write": "tests/golden.py"}
# The files the README's Python API block and CI job use, as the text after the API block describes them.
SEED = EXAMPLES / "seed_flawed.yaml"
BATCH = ("seed_flawed.yaml", "seed_safe_design.yaml")


@dataclass(frozen=True)
class Block:
    """A fenced block of README.md: its info string, the line of its first content line, its text."""

    lang: str
    line: int
    text: str

    @property
    def where(self) -> str:
        return f"README.md:{self.line}"


def fenced_blocks(text: str) -> list:
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        if lines[i].startswith("```"):
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            blocks.append(Block(lines[i][3:].strip(), i + 2, "\n".join(lines[i + 1:end]) + "\n"))
            i = end
        i += 1
    return blocks


BLOCKS = fenced_blocks(TEXT)
COMMANDS = [b for b in BLOCKS if b.text.startswith("$ prunecheck ")]
PYTHON = [b for b in BLOCKS if b.lang == "python"]


def ids(blocks) -> list:
    return [b.where for b in blocks]


def block_with(lang: str, needle: str) -> Block:
    (block,) = [b for b in BLOCKS if b.lang == lang and needle in b.text]
    return block


def parser_options() -> dict:
    """{command: its `--option`s} for the console script's parser and every registered subcommand ('': top level)."""
    parser = build_parser({**builtin_commands(), **cli.COMMANDS})
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    parsers = {"": parser, **sub.choices}
    return {name: {s for a in p._actions for s in a.option_strings if s.startswith("--") and s != "--help"}
            for name, p in parsers.items()}


OPTIONS = parser_options()


def run_cli(argv: list) -> tuple:
    """(exit code, stdout and stderr interleaved as a terminal shows them), in this process."""
    out = io.StringIO()
    return cli.main(argv, out, out), out.getvalue()


def bounded(argv: list) -> list:
    """argv with the tests' resource bounds added when its command takes them (the README shows what a user types)."""
    return argv + CLI_BOUNDS if {"--timeout", "--rlimit"} <= OPTIONS.get(argv[0], set()) else argv


def normalised(lines) -> list:
    out = []
    for line in lines:
        for pattern, replacement in VOLATILE:
            line = pattern.sub(replacement, line)
        out.append(line.rstrip())
    return out


def first_mismatch(expected: list, actual: list):
    """None if `expected` matches `actual` (a line `...`, indented or not, matches any lines, none included), else
    the index of the furthest expected line no match gets past."""
    furthest = 0

    @functools.lru_cache(maxsize=None)
    def match(i: int, j: int) -> bool:
        nonlocal furthest
        furthest = max(furthest, i)
        if i == len(expected):
            return j == len(actual)
        if expected[i].strip() == "...":
            return any(match(i + 1, k) for k in range(j, len(actual) + 1))
        return j < len(actual) and expected[i] == actual[j] and match(i + 1, j + 1)

    return None if match(0, 0) else furthest


@pytest.mark.parametrize("block", COMMANDS, ids=ids(COMMANDS))
def test_each_readme_command_prints_what_the_readme_shows(block, monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    command, *shown = block.text.splitlines()
    code, output = run_cli(bounded(shlex.split(command)[2:]))
    assert code in (0, 1, 3), f"{block.where}: `{command[2:]}` exited {code}:\n{output}"
    expected, actual = normalised(shown), normalised(output.splitlines())
    at = first_mismatch(expected, actual)
    assert at is None, (f"{block.where}: the output of `{command[2:]}` differs from the README's block at its line "
                        f"{block.line + 1 + at} ({(expected + ['<end of block>'])[at]!r}); the tool prints:\n{output}")


def test_the_tour_runs_at_least_one_command_whose_output_is_shown():
    assert COMMANDS and all(len(b.text.splitlines()) > 1 for b in COMMANDS)


def test_the_tours_policy_block_is_the_example_file_it_names():
    block = block_with("yaml", "# examples/policies/")
    path = ROOT / block.text.split()[1]
    shown, actual = parse_policy_text(block.text, path.name), load_policy(path)
    fields = ("name", "evict", "rank", "budget", "deployment")
    assert [getattr(shown, f) for f in fields] == [getattr(actual, f) for f in fields], \
        f"{block.where}: the policy shown differs from {path.relative_to(ROOT)} in its meaning"


def test_the_cache_rejection_sample_is_what_a_tampered_entry_gives(monkeypatch, tmp_path):
    """The README's sample of a rejected cache entry: C1's entry relabelled `holds`, resealed as an attacker would."""
    block = block_with("", "cache entry rejected")
    (tmp_path / "policies").mkdir()
    shutil.copy(SEED, tmp_path / "policies" / SEED.name)
    shutil.copy(EXAMPLES / "prunecheck.toml", tmp_path / "policies" / "prunecheck.toml")  # the operator's deployment
    monkeypatch.chdir(tmp_path)
    argv = bounded(["check", "policies/", "--cache", "cache"])
    assert run_cli(argv)[0] == 1
    (path,) = (tmp_path / "cache").rglob("*.json")
    entry = json.loads(path.read_text(encoding="utf-8"))
    entry["report"]["conditions"]["C1"]["verdict"] = "holds"
    canonical = json.dumps(entry["report"], sort_keys=True, separators=(",", ":")).encode()
    entry["sha256"] = hashlib.sha256(canonical).hexdigest()
    path.write_text(json.dumps(entry), encoding="utf-8")
    code, output = run_cli(argv)
    at = first_mismatch(normalised(block.text.splitlines()), normalised(output.splitlines()))
    assert (code, at) == (1, None), (f"{block.where}: the sample differs from what `prunecheck check policies/` "
                                     f"prints after the tampering, from the block's line {block.line + (at or 0)}; "
                                     f"the tool prints:\n{output}")


# --- set-up: the README's commands are the ones CI runs -------------------------------------------------------------

def setup_commands() -> list:
    section = TEXT.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    return [b.text.strip() for b in fenced_blocks(section)]


def ci_lines() -> list:
    return [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]


def test_ci_runs_exactly_the_readmes_test_command():
    (test_command,) = [c for c in setup_commands() if c.startswith("pytest")]
    runs = [line for line in ci_lines() if line.startswith("pytest")]
    assert runs == [test_command], f".ci/run runs {runs}, the README's Set-up says `{test_command}`"


def test_ci_installs_as_the_readme_says():
    (install,) = [c.split(" && ")[0] for c in setup_commands() if c.startswith("pip install")]
    quiet = {"--quiet", "--disable-pip-version-check"}
    installs = [" ".join(w for w in line.split() if w not in quiet) for line in ci_lines()
                if line.startswith("pip install")]
    assert installs == [install], f".ci/run installs with {installs}, the README's Set-up with `{install}`"


def test_the_readmes_test_command_shows_skip_reasons(pytestconfig):
    flags = [w[2:] for w in pytestconfig.getini("addopts") if w.startswith("-r")]
    assert any("s" in f or "a" in f or "A" in f for f in flags), \
        "pytest's addopts must report skip reasons (-rs), which the README's Set-up promises"


def test_the_setup_runs_a_command_the_parser_knows():
    """`prunecheck reproduce` itself is run (exit 0) by tests/test_cli.py; here: the README names it as it is."""
    (line,) = [c for c in setup_commands() if "&& prunecheck " in c]
    argv = shlex.split(line.split(" && ")[1])
    assert argv[0] == "prunecheck"
    args = build_parser({**builtin_commands(), **cli.COMMANDS}).parse_args(argv[1:])
    assert args.command == "reproduce", line


def pip_installs() -> list:
    return re.findall(r"pip install ([^`\n&]*?)(?:`|&&|$)", TEXT, re.M)


def test_every_pip_install_in_the_readme_is_from_the_clone_or_the_git_url():
    """prunecheck is not on the package index: `pip install prunecheck` would install something else or nothing."""
    extras = set(importlib.metadata.metadata("prunecheck").get_all("Provides-Extra"))
    assert pip_installs()
    for spec in pip_installs():
        spec = spec.strip()
        clone = re.fullmatch(r"-e '\.\[(\w+)\]'", spec)
        assert (clone and clone.group(1) in extras) or spec.startswith("git+https://"), \
            f"README.md: `pip install {spec}` installs neither from the clone (-e '.[extra]') nor from a git URL"


# --- CI snippets --------------------------------------------------------------------------------------------------

def github_job_commands() -> list:
    steps = yaml.safe_load(block_with("yaml", "upload-sarif").text)
    return [c.strip() for c in steps[0]["run"].split("&&")]


def test_the_github_job_installs_from_the_git_url():
    install = github_job_commands()[0]
    assert re.fullmatch(r"pip install git\+https://\S+", install), f"the GitHub Actions job installs with `{install}`"


def test_the_github_job_checks_a_directory_and_writes_valid_sarif(monkeypatch, tmp_path):
    argv = shlex.split(github_job_commands()[1])
    assert argv[0] == "prunecheck" and argv[-2] == ">", argv
    (tmp_path / "policies").mkdir()
    for name in (*BATCH, "prunecheck.toml"):  # the policies and the operator's configuration beside them
        shutil.copy(EXAMPLES / name, tmp_path / "policies" / name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(bounded(argv[1:-2]), out, err)
    assert code == 1, err.getvalue()
    log = json.loads(out.getvalue())
    jsonschema.validate(log, json.loads((ROOT / "tests" / "data" / "sarif-2.1.0-rtm.5.json").read_text()))
    results = [r for run in log["runs"] for r in run["results"]]
    located = {(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], r["ruleId"]) for r in results}
    # T1: the agent calls tools by default (tool_calls: on, ADR 0033) and seed_flawed's role-blind selection splits a
    # pair; M1 and J1: the second seed's conditions are checked by default and its compaction destroys what it takes,
    # cited or not (ADR 0035)
    assert located == {("policies/seed_flawed.yaml", c) for c in ("C1", "C2", "C4", "T1", "M1", "J1")}


def recipe_commands() -> list:
    """The baseline recipe: a block of bare `prunecheck` lines, each with an optional `# comment`."""
    block = block_with("", "--write-baseline")
    lines = [line.split("#", 1)[0].strip() for line in block.text.splitlines()]
    return [shlex.split(line) for line in lines if line]


def test_the_baseline_recipe_accepts_the_findings_it_wrote_and_marks_them_in_sarif(monkeypatch, tmp_path):
    first, second = recipe_commands()
    assert first[0] == second[0] == "prunecheck"
    (tmp_path / "policies").mkdir()
    for name in (*BATCH, "prunecheck.toml"):  # the policies and the operator's configuration beside them
        shutil.copy(EXAMPLES / name, tmp_path / "policies" / name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    code, out = run_cli(bounded(first[1:]))
    assert code == 0, out
    assert (tmp_path / "prunecheck-baseline.json").is_file()
    err = io.StringIO()
    sarif = io.StringIO()
    code = cli.main(bounded(second[1:]), sarif, err)
    assert code == 0, err.getvalue()
    log = json.loads(sarif.getvalue())
    jsonschema.validate(log, json.loads((ROOT / "tests" / "data" / "sarif-2.1.0-rtm.5.json").read_text()))
    results = [r for run in log["runs"] for r in run["results"]]
    assert results and all(r["suppressions"][0]["kind"] == "external" for r in results)


def test_the_pre_commit_snippet_is_the_repositorys_hook_and_names_no_missing_tag():
    (entry,) = yaml.safe_load(block_with("yaml", "hooks:").text)
    (hook,) = entry["hooks"]
    (shipped,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert entry["repo"] == "local" and "rev" not in entry, "a `rev:` must name a tag or commit that exists"
    assert hook["language"] == "system" and hook["entry"].split()[0] == "prunecheck"
    same = ("id", "name", "entry", "files", "require_serial")
    assert {k: hook.get(k) for k in same} == {k: shipped.get(k) for k in same}
    assert not re.search(r"rev: v\d", TEXT), "the README names a release tag; the repository has none"


# --- the Python blocks --------------------------------------------------------------------------------------------

def api_workspace(path) -> None:
    """The files the README's API block uses, as the text after it describes them."""
    shutil.copy(SEED, path / "policy.yaml")
    shutil.copy(SEED, path / "old.yaml")
    text = SEED.read_text(encoding="utf-8")
    (path / "new.yaml").write_text(text.replace("evict: not pinned and", 'evict: not pinned and kind != "record" and'),
                                   encoding="utf-8")
    assert (path / "new.yaml").read_text(encoding="utf-8") != text
    (path / "policies").mkdir()
    for name in BATCH:
        shutil.copy(EXAMPLES / name, path / "policies" / name)
    shutil.copy(EXAMPLES / "prunecheck.toml", path / "policies" / "prunecheck.toml")
    (path / "prunecheck.toml").write_text(block_with("toml", "beside policy.yaml").text, encoding="utf-8")


def bound_the_api(monkeypatch) -> None:
    """prunecheck's solving functions with the tests' resource bounds as defaults (a call may still pass its own)."""
    for name in ("check", "repair", "diff"):
        monkeypatch.setattr(prunecheck, name, functools.partial(getattr(prunecheck, name), **BOUNDS))
    monkeypatch.setattr(prunecheck, "check_many", functools.partial(prunecheck.check_many, **BOUNDS))


@pytest.mark.parametrize("block", PYTHON, ids=ids(PYTHON))
def test_each_python_block_runs_and_says_what_it_gives(block, monkeypatch, tmp_path):
    api_workspace(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    bound_the_api(monkeypatch)
    if not block.text.startswith(">>> "):
        # Code without stated results may only define things: a block that calls the API says what it gives.
        assert "prunecheck." not in block.text, f"{block.where}: write a block that calls prunecheck as a doctest"
        scope = {}
        exec(compile(block.text, block.where, "exec"), scope)  # the README's own code, not a policy
        assert any(callable(v) for k, v in scope.items() if not k.startswith("__")), f"{block.where} defines nothing"
        return
    test = doctest.DocTestParser().get_doctest(block.text, {}, block.where, str(README), block.line - 1)
    report = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test, out=report.write)
    assert runner.failures == 0 and runner.tries > 0, f"{block.where}: the block's stated results differ:\n" + \
        report.getvalue()


# --- option lists and help ----------------------------------------------------------------------------------------

def mentioned(option: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", TEXT) is not None


def test_every_option_of_every_command_is_in_the_readme():
    missing = [f"{command or 'prunecheck'} {option}" for command, options in OPTIONS.items()
               for option in sorted(options) if not mentioned(option)]
    assert not missing, ("README.md does not mention these options of the parsers (checker/cli.py build_parser and "
                         "the registered commands): " + ", ".join(missing))


def test_every_option_the_readme_names_exists():
    known = set().union(*OPTIONS.values(), OTHER_TOOLS, {"--help"})
    unknown = [f"README.md:{TEXT.count(chr(10), 0, m.start()) + 1}: {m.group()}"
               for m in re.finditer(r"(?<![\w-])--[a-z][a-z0-9-]*", TEXT) if m.group() not in known]
    assert not unknown, "README.md names options no parser has: " + ", ".join(unknown)


def help_text(*argv) -> str:
    code, output = run_cli([*argv, "--help"])
    assert code == 0
    return " ".join(output.split())


def test_check_help_says_it_takes_directories_and_globs():
    text = help_text("check")
    assert "director" in text and "glob" in text, text


@pytest.mark.parametrize("command", sorted(c for c in OPTIONS if c))
def test_every_choice_of_an_option_is_described_in_its_help(command):
    parser = build_parser({**builtin_commands(), **cli.COMMANDS})
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    undescribed = [f"{command} {a.option_strings[-1]} {choice}" for a in sub.choices[command]._actions
                   if a.choices and a.option_strings for choice in a.choices
                   if not re.search(rf"\b{re.escape(str(choice))}\b", a.help or "")]
    assert not undescribed, "these choices are not described in their option's help: " + ", ".join(undescribed)


def test_every_command_has_its_exit_codes_in_the_table_and_the_readme():
    commands = set(OPTIONS) - {""}
    assert commands <= set(EXIT_MEANINGS), "checker/commands/frontdoor.py EXIT_MEANINGS lacks a command"
    paragraph = " ".join(TEXT.split("\nExit codes: ", 1)[1].split("\n\n", 1)[0].split())
    missing = sorted(c for c in commands - {"check"} if f"`{c}` 0 " not in paragraph)
    assert not missing, f"the README's exit-code paragraph does not say what 0 means for: {', '.join(missing)}"


def test_every_command_is_in_the_readme():
    missing = sorted(c for c in set(OPTIONS) - {""} if f"prunecheck {c}" not in TEXT)
    assert not missing, f"README.md never shows `prunecheck COMMAND` for: {', '.join(missing)}"


CHECKED_BLOCKS = {
    "a command, its output compared": lambda b: b.text.startswith("$ prunecheck "),
    "Python, run": lambda b: b.lang == "python",
    "a set-up command, compared with .ci/run": lambda b: b.text.strip() in setup_commands(),
    "an example policy, compared with its file": lambda b: b.lang == "yaml" and b.text.startswith("# examples/"),
    "the GitHub Actions job, run": lambda b: b.lang == "yaml" and "upload-sarif" in b.text,
    "the pre-commit hook, compared": lambda b: b.lang == "yaml" and "hooks:" in b.text,
    "the cache rejection sample, reproduced": lambda b: "cache entry rejected" in b.text,
    "the baseline recipe, run": lambda b: b.lang == "" and "--write-baseline" in b.text,
    "the layout tree, compared with the packages": lambda b: b.lang == "text" and "prunecheck (root)" in b.text,
    "the MCP client configuration, started": lambda b: b.lang == "json" and "mcpServers" in b.text,
    "the operator's configuration sample, read": lambda b: b.lang == "toml" and "[per-file-deployment]" in b.text,
    "the API workspace's configuration, used": lambda b: b.lang == "toml" and "beside policy.yaml" in b.text,
    "the list of stages, parsed and checked": lambda b: b.lang == "yaml" and b.text.startswith("name: mask-then"),
}


def test_the_list_of_stages_is_two_stages_searched_and_never_proved():
    """The README's `compaction:` example: two stages, the second reading the window the first left; checked, it is
    searched by the explicit engine only, and nothing holds."""
    from prunecheck.checker.check import check
    from prunecheck.checker.language.loader import parse_policy_text
    from prunecheck.checker.options import CheckOptions
    from prunecheck.checker.result import Note, Verdict

    policy = parse_policy_text(block_with("yaml", "name: mask-then").text, "readme-stages.yaml")
    assert [s.effect for s in policy.stages] == ["mask", "summarise"]
    # depth-bounded (the explicit engine) and rlimit-bounded; the hour is a hang guard only
    report = check(policy, CheckOptions(depth=2, spans=4, only=("M1", "C1"), **BOUNDS))
    # the safe default keeps records out of reach: C1 is not violated, yet not proved either; M1 is violated (a
    # summary destroys what it takes, at depth 2: one span of 100001 tokens, then a compaction)
    assert {r.condition: r.verdict for r in report.results} == {"C1": Verdict.UNKNOWN, "M1": Verdict.VIOLATED}
    assert all(r.reason.note is Note.STAGES for r in report.results)


def test_the_configuration_sample_is_read_as_the_readme_says(tmp_path):
    """The README's prunecheck.toml: its [deployment] for every policy below it, a per-file table over it, no trust."""
    from prunecheck.checker.language.operator import operator_for

    (tmp_path / "prunecheck.toml").write_text(block_with("toml", "[per-file-deployment]").text)
    plain, legacy = operator_for(tmp_path / "a.yaml"), operator_for(tmp_path / "legacy_a.yaml")
    assert dict(plain.settings.settings) == {"records": "undo_region", "pins": "host"}
    assert dict(legacy.settings.settings) == {"records": "window", "pins": "host"}
    assert not plain.trust_policy_deployment and plain.source.endswith("prunecheck.toml")


def test_the_mcp_client_configuration_starts_the_server():
    """The README's `mcpServers` entry, as a client would launch it: the console script serves prunecheck's tools."""
    import asyncio

    mcp = pytest.importorskip("mcp")
    (entry,) = json.loads(block_with("json", "mcpServers").text)["mcpServers"].values()
    command = shutil.which(entry["command"])
    assert command, f"the configuration's command {entry['command']!r} is not on PATH"

    async def tools():
        async with mcp.Client(mcp.StdioServerParameters(command=command, args=entry["args"])) as client:
            return {tool.name for tool in (await client.list_tools()).tools}
    assert asyncio.run(tools()) == {"check", "explain", "repair", "diff", "certify"}


def test_the_layout_tree_names_every_package_and_only_packages():
    """The README's layout tree: each `NAME/` line, nested by indentation, is a folder with an __init__.py, and every
    such folder is in the tree, so the layout the README describes is the one the tests' import contracts enforce."""
    block = next(b for b in BLOCKS if CHECKED_BLOCKS["the layout tree, compared with the packages"](b))
    named, stack = set(), []
    for line in block.text.splitlines():
        match = re.match(r"^( *)([a-z_]+)/ ", line)
        if match:
            depth = len(match.group(1)) // 2
            stack[depth - 1:] = [match.group(2)]
            named.add("/".join(stack))
    root = README.parent
    packages = {str(p.parent.relative_to(root)) for folder in ("spec", "symbolic", "checker", "proofs")
                for p in (root / folder).rglob("__init__.py")}
    packages |= {p.name for p in root.iterdir() if (p / "__init__.py").exists()}
    assert named == packages


def test_every_fenced_block_is_checked_by_a_test():
    unchecked = [b.where for b in BLOCKS if not any(kind(b) for kind in CHECKED_BLOCKS.values())]
    assert not unchecked, (f"no test checks the fenced blocks at {', '.join(unchecked)}: start a command with "
                           "`$ prunecheck ` (its output is then compared), or add a check in tests/test_readme.py")
