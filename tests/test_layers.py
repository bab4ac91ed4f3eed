"""The architecture, enforced: import-linter's contracts (pyproject.toml), no import cycle, no private name imported."""

import ast
from pathlib import Path

import networkx as nx
import pytest

import prunecheck

grimp = pytest.importorskip("grimp")
cli = pytest.importorskip("importlinter.cli")

ROOT = Path(prunecheck.__file__).resolve().parent
PACKAGES = ("spec", "symbolic", "checker", "proofs")
CONTRACTS = 4


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph("prunecheck", cache_dir=None)


def test_import_linter_contracts_are_kept(capsys):
    code = cli.lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"Contracts: {CONTRACTS} kept, 0 broken." in out


def test_the_graph_sees_every_package_and_every_kind_of_import(graph):
    for package in PACKAGES:
        assert f"prunecheck.{package}" in graph.modules
    assert graph.direct_import_exists(importer="prunecheck.checker.engines.bmc", imported="prunecheck.symbolic.model")
    lazy = ast.parse((ROOT / "checker" / "cli.py").read_text(encoding="utf-8"))
    inside = [n for f in ast.walk(lazy) if isinstance(f, ast.FunctionDef) for n in ast.walk(f)
              if isinstance(n, ast.ImportFrom)]
    seen = graph.find_modules_directly_imported_by("prunecheck.checker.cli")
    assert inside and all(n.module in seen or {f"{n.module}.{a.name}" for a in n.names} <= seen
                          for n in inside if n.module.startswith("prunecheck."))


def test_no_import_cycle_between_modules(graph):
    edges = nx.DiGraph((m, t) for m in graph.modules for t in graph.find_modules_directly_imported_by(m))
    assert list(nx.simple_cycles(edges)) == []


def _private_imports(path: Path) -> list:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [(n.lineno, n.module, a.name) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
            and (n.module or "").startswith("prunecheck") for a in n.names
            if a.name.startswith("_") and not a.name.startswith("__")]


def test_no_private_name_is_imported_across_modules():
    found = {str(p.relative_to(ROOT)): _private_imports(p) for package in PACKAGES
             for p in sorted((ROOT / package).rglob("*.py"))}
    found.update({p.name: _private_imports(p) for p in sorted(ROOT.glob("*.py"))})
    assert {path: names for path, names in found.items() if names} == {}


def test_spec_needs_no_solver():
    """`import prunecheck.spec...` in a fresh interpreter loads no z3: the semantics run without a solver."""
    import subprocess
    import sys
    modules = [f"prunecheck.spec.{p.stem}" for p in sorted((ROOT / "spec").glob("*.py")) if p.stem != "__init__"]
    code = "import sys\n" + "".join(f"import {m}\n" for m in modules) + "print('z3' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.stdout.strip() == "False", done.stderr


def test_every_package_folder_is_in_the_wheel():
    """pyproject.toml lists the packages explicitly (the root package is the repository root): a folder with an
    `__init__.py` that the list misses would be absent from every non-editable install."""
    tomllib = pytest.importorskip("tomllib")
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    folders = {"prunecheck"} | {"prunecheck." + ".".join(p.parent.relative_to(ROOT).parts)
                                for package in PACKAGES for p in (ROOT / package).rglob("__init__.py")}
    assert listed == folders
