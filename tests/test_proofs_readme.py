"""proofs/README.md is what a fresh `prunecheck prove --markdown` prints, up to the solver times."""

import difflib
import re
import subprocess
import sys

import pytest

from prunecheck.proofs import THEOREMS, absence, self_pins
from prunecheck.proofs.run import markdown, result_of
from prunecheck.proofs.theorem import TheoremResult

from conftest import HANG_GUARD, ROOT

COMMITTED = (ROOT / "proofs" / "README.md").read_text(encoding="utf-8")
REGENERATE = "regenerate it with `prunecheck prove --markdown > proofs/README.md`"
# The third cell of a theorem's row is its solver time: the one part of the page that differs between runs.
TIME_CELL = re.compile(r"^(\| [^|\n]+ \| [^|\n]+ \| )\d+\.\d( \|)", re.M)


def without_timings(text: str) -> str:
    return TIME_CELL.sub(r"\1<seconds>\2", text)


def differences(committed: str, fresh: str) -> str:
    return "".join(difflib.unified_diff(committed.splitlines(True), fresh.splitlines(True), "proofs/README.md",
                                        "prunecheck prove --markdown", n=0))


def row(text: str, name: str) -> str:
    (line,) = [line for line in text.splitlines() if line.startswith(f"| {name} |")]
    return without_timings(line)


def before_the_lattice_tables(text: str) -> list:
    """The page up to the first deployment's lattice table, without the theorems' rows (what solving decides)."""
    names = [module.NAME for module in THEOREMS]
    head = text.split("\n**", 1)[0].rstrip("\n")
    return [line for line in head.splitlines() if not any(line.startswith(f"| {n} |") for n in names)]


@pytest.mark.slow
def test_the_committed_page_is_a_fresh_prove_markdown_up_to_timings():
    done = subprocess.run([sys.executable, "-m", "prunecheck", "prove", "--markdown"], capture_output=True,
                          text=True, timeout=HANG_GUARD, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    fresh, committed = without_timings(done.stdout), without_timings(COMMITTED)
    assert fresh == committed, f"proofs/README.md is stale; {REGENERATE}:\n{differences(committed, fresh)}"


def test_the_pages_text_and_statements_are_the_theorem_modules():
    stubs = [TheoremResult(m.NAME, m.STATEMENT, True, "", 0.0, "") for m in THEOREMS]
    fresh = before_the_lattice_tables(markdown(stubs))
    committed = before_the_lattice_tables(COMMITTED)
    assert committed == fresh, f"proofs/README.md is stale; {REGENERATE}:\n" + \
        differences("\n".join(committed) + "\n", "\n".join(fresh) + "\n")


def test_the_page_lists_every_theorem_in_the_order_prove_runs_them():
    listed = [line.split(" | ")[0][2:] for line in COMMITTED.split("## Statements")[0].splitlines()
              if line.startswith("| ") and not line.startswith("| theorem |")]
    assert listed == [m.NAME for m in THEOREMS], REGENERATE


@pytest.mark.parametrize("module", [self_pins, absence], ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_a_cheap_theorems_row_is_what_proving_it_gives(module):
    fresh = markdown([result_of(module)])
    assert row(COMMITTED, module.NAME) == row(fresh, module.NAME), REGENERATE
