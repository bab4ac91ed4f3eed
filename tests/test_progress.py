"""Progress on stderr when it is a terminal (never on stdout), none when it is not or with --quiet."""

import io
import re
import shutil

import pytest

from prunecheck import cli
from prunecheck.checker.outputs import progress as display
from prunecheck.checker.outputs.progress import Display, progress_for
from prunecheck.checker.progress import QUIET, current
from prunecheck.proofs.theorem import TheoremResult, any_policy, bounded_label, prove_invariant
from prunecheck.spec.policy import Deployment

from conftest import CLI_BOUNDS, EXAMPLES, HOUR


class Terminal(io.StringIO):
    """A stream that says it is a terminal, as a real one would."""

    def isatty(self):
        return True


@pytest.fixture(autouse=True)
def at_once(monkeypatch):
    """The display shows from the start instead of after DELAY seconds, so what it draws cannot depend on timing;
    on a wide terminal, so that it does not shorten what the tests look for."""
    monkeypatch.setattr(display, "DELAY", 0)
    monkeypatch.setenv("COLUMNS", "200")


def run(argv, terminal):
    out, err = io.StringIO(), Terminal() if terminal else io.StringIO()
    code = cli.main(argv, out, err)
    return code, out.getvalue(), err.getvalue()


def untimed(text):
    """The text with its measured durations and solver query counts masked (they differ from run to run in one
    process, progress or not: the second check reuses what the first built)."""
    return re.sub(r"\d+ quer(y|ies)", "# queries", re.sub(r"\d+\.\d+", "#", text))


def test_the_terminal_decision_is_a_value_and_quiet_wins():
    assert progress_for(io.StringIO()) is QUIET
    assert progress_for(Terminal(), quiet=True) is QUIET
    assert progress_for(Terminal(), terminal=False) is QUIET
    assert isinstance(progress_for(io.StringIO(), terminal=True), Display)
    assert isinstance(progress_for(Terminal()), Display)


def test_a_display_draws_item_and_step_escaped_and_is_current_only_inside_its_task():
    stream = Terminal()
    shown = progress_for(stream)
    with shown.task("proving", total=2):
        assert current() is shown
        shown.item("evil\x1b[2Jname")
        shown.step("C1: proof by induction")
        shown.advance()
        print("wrote out/x.itf.json", file=shown.lines(io.StringIO()))
    assert current() is QUIET
    text = stream.getvalue()
    assert "evil\\x1b[2Jname: C1: proof by induction" in text and "\x1b[2J" not in text
    assert "1/2" in text and "ETA " in text and "wrote out/x.itf.json\n" in text


def test_work_done_before_the_delay_shows_nothing():
    stream = Terminal()
    with Display(stream, delay=HOUR).task("checking", total=1) as progress:
        progress.item("quick.yaml")
        progress.advance()
        progress.note("a note is shown at once")
    assert stream.getvalue() == "a note is shown at once\n"


class _Theorem:
    """A stand-in for a theorem module: one real induction (so the proofs layer reports its step), a fixed time."""

    def __init__(self, name):
        self.NAME = name

    def prove(self):
        proved, rechecked, _ = prove_invariant(any_policy(Deployment()), "C1", free_policy=True)
        return TheoremResult(self.NAME, "s", proved, "d", 0.5, str(rechecked))

    @staticmethod
    def label():
        return bounded_label(2)


def test_prove_shows_each_theorem_on_a_terminal_and_nothing_elsewhere(monkeypatch):
    monkeypatch.setattr("prunecheck.proofs.run.THEOREMS", (_Theorem("first theorem"), _Theorem("second theorem")))
    code, out, err = run(["prove"], terminal=True)
    assert code == 0 and "first theorem" in out
    assert "proving" in err and "first theorem: C1: proof by induction" in err and "second theorem" in err
    assert "2/2" in err and "\x1b[" not in out
    quiet = run(["prove", "--quiet"], terminal=True)
    piped = run(["prove"], terminal=False)
    assert quiet == piped == (0, out, "")  # stdout byte for byte the same; no progress off a terminal
    code, markdown, err = run(["prove", "--markdown"], terminal=True)
    assert markdown.startswith("# Theorems") and "prints the Markdown text of proofs/README.md" in err
    assert "proves every theorem again" in err and "proves every theorem again" not in markdown
    assert run(["prove", "--markdown"], terminal=False) == (0, markdown, "")
    _, help_text, _ = run(["prove", "--help"], terminal=False)
    assert "prove every theorem again" in " ".join(help_text.split())


@pytest.fixture
def two_policies(tmp_path):
    for name in ("seed_flawed.yaml", "blind_undo.yaml"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    return tmp_path


def test_batch_shows_the_file_it_checks_and_the_engine_on_a_terminal_only(two_policies):
    argv = ["check", str(two_policies), "--no-cache", "--only", "C1,C3", "--depth", "3", *CLI_BOUNDS]
    code, out, err = run(argv, terminal=True)
    assert code == 1 and "seed_flawed.yaml" in out
    assert "checking" in err and "2/2" in err
    assert "blind_undo.yaml: C3: proof by induction" in err and "seed_flawed.yaml: bounded search" in err
    assert "proof by induction" not in out and "\x1b[" not in out
    piped = run(argv, terminal=False)
    assert (piped[0], untimed(piped[1]), piped[2]) == (code, untimed(out), "")
    code, json_out, err = run(argv + ["--format", "json", "-q"], terminal=True)
    assert code == 1 and err == "" and json_out.startswith("{")


def test_one_check_shows_progress_and_prints_its_written_files_after_it(tmp_path):
    argv = ["check", str(EXAMPLES / "seed_flawed.yaml"), "--only", "C1", "--depth", "3", "--out", str(tmp_path),
            *CLI_BOUNDS]
    code, out, err = run(argv, terminal=True)
    assert code == 1 and "seed_flawed.yaml: bounded search 2/3: C1" in err
    # What the terminal shows of each line: the text after the display erased it (the files are written once every
    # policy is checked, after the display closed: an interrupt before then writes nothing).
    written = [re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\r", "", line.rsplit("\x1b[2K", 1)[-1])
               for line in err.split("\n") if "wrote " in line]
    assert len(written) == 1 and written[0].startswith("wrote ") and written[0].endswith(".C1.itf.json")
    piped = run(argv, terminal=False)
    assert (piped[0], untimed(piped[1])) == (code, untimed(out)) and piped[2] == written[0] + "\n"


def test_repair_shows_each_candidate_on_a_terminal_only():
    argv = ["repair", str(EXAMPLES / "blind_undo.yaml"), "--text-only", "--depth", "3", *CLI_BOUNDS]
    code, out, err = run(argv, terminal=True)
    assert code == 1 and "searched 7 candidates" in out
    assert "repairing" in err and "blind-undo as written: C3: Spacer" in err and "7/7" in err
    assert "candidate: exclude recovery records from evict" in err
    assert "candidate: " not in out and "\x1b[" not in out
    piped = run(argv, terminal=False)
    assert (piped[0], untimed(piped[1]), piped[2]) == (code, untimed(out), "")


def test_diff_shows_the_lockstep_depth_on_a_terminal_only(tmp_path):
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text("name: old\nevict: false\n")
    new.write_text("name: new\nevict: age > 20\n")  # a difference beyond the depth: every depth is searched
    argv = ["diff", str(old), str(new), "--depth", "3", "--spans", "3", *CLI_BOUNDS]
    code, out, err = run(argv, terminal=True)
    assert code == 3 and "3/3" in err and "NEW evicts what OLD keeps" in err
    assert "diffing" in err and "equivalence proof" in err and "lockstep search: depth 1 of 3" in err
    assert "\x1b[" not in out
    piped = run(argv, terminal=False)
    assert (piped[0], untimed(piped[1]), piped[2]) == (code, untimed(out), "")
    assert run(argv + ["--quiet"], terminal=True)[2] == ""
