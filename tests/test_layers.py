"""Imports flow one way, spec <- checker <- proofs: a graph of every module's imports, read from the source."""

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"spec": "prunecheck.spec", "checker": "prunecheck.checker", "proofs": "prunecheck.proofs"}
LAYER = {"prunecheck.spec": 0, "prunecheck.checker": 1, "prunecheck.proofs": 2}


def module_name(path: Path) -> str:
    package = PACKAGES[path.relative_to(ROOT).parts[0]]
    return package if path.stem == "__init__" else f"{package}.{path.stem}"


def imported(path: Path) -> set:
    """The prunecheck modules one file imports, relative imports resolved."""
    here = module_name(path).rsplit(".", 0 if path.stem == "__init__" else 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = here.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            found |= {base} | {f"{base}.{alias.name}" for alias in node.names}
    return {name for name in found if name.startswith("prunecheck.")}


def layer_of(name: str):
    return next((LAYER[p] for p in LAYER if name == p or name.startswith(p + ".")), None)


def import_graph() -> nx.DiGraph:
    graph = nx.DiGraph()
    for folder in PACKAGES:
        for path in sorted((ROOT / folder).glob("*.py")):
            source = module_name(path)
            graph.add_node(source)
            graph.add_edges_from((source, target) for target in imported(path) if layer_of(target) is not None)
    return graph


def test_the_graph_sees_imports_of_every_kind():
    graph = import_graph()
    assert graph.has_edge("prunecheck.checker.bmc", "prunecheck.spec.model")  # absolute
    assert graph.has_edge("prunecheck.proofs.lattice", "prunecheck.checker.bmc")  # absolute, the layer below
    assert graph.has_edge("prunecheck.checker.check", "prunecheck.checker.bmc")  # relative: `from .bmc import`
    assert graph.has_edge("prunecheck.proofs.lattice", "prunecheck.proofs.theorem")


def test_no_module_imports_from_a_layer_above_its_own():
    upward = sorted((s, t) for s, t in import_graph().edges if layer_of(t) > layer_of(s))
    assert not upward, f"imports against the layers spec <- checker <- proofs: {upward}"
