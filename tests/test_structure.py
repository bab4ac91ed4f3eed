"""Size limits that keep modules readable: no module of the package over 500 lines, no function over 60."""

import ast
from pathlib import Path

import prunecheck

ROOT = Path(prunecheck.__file__).resolve().parent
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60


def package_modules() -> list:
    return sorted(ROOT.glob("*.py")) + sorted(p for folder in ("spec", "symbolic", "checker", "proofs")
                                              for p in (ROOT / folder).rglob("*.py"))


def test_no_module_over_the_limit():
    long = {str(p.relative_to(ROOT)): n for p in package_modules()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert long == {}


def test_no_function_over_the_limit():
    long = {}
    for path in package_modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"] = lines
    assert long == {}
