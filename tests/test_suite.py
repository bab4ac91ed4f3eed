"""The test suite's own structure: INDEX.md names every module once, the unit tier exists, helpers live in support."""

import ast
import re

from conftest import ROOT, UNIT_MODULES

TESTS = ROOT / "tests"
MODULES = sorted(path.stem for path in TESTS.glob("test_*.py"))
HELPERS = ("conftest", "support", "policy_table", "golden", "hostile")


def _indexed() -> list:
    """The test file of each table row of INDEX.md, in order."""
    text = (TESTS / "INDEX.md").read_text(encoding="utf-8")
    return re.findall(r"^\| `(test_[a-z0-9_]+)\.py` \|", text, flags=re.MULTILINE)


def test_the_index_names_every_test_module_exactly_once():
    indexed = _indexed()
    assert sorted(indexed) == MODULES, (set(MODULES) ^ set(indexed), [m for m in indexed if indexed.count(m) > 1])


def test_the_unit_tier_names_existing_test_modules():
    assert UNIT_MODULES and UNIT_MODULES <= set(MODULES), sorted(UNIT_MODULES - set(MODULES))


def _imports(path) -> list:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found += [(node.lineno, node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, "") for alias in node.names]
    return found


def test_test_modules_share_helpers_only_through_the_helper_modules():
    wrong = []
    for name in MODULES + list(HELPERS):
        for line, module, imported in _imports(TESTS / f"{name}.py"):
            if module.startswith("test_") or (module in HELPERS and imported.startswith("_")):
                wrong.append(f"tests/{name}.py:{line}: {module} {imported}".strip())
    assert not wrong, "import shared helpers from tests/support.py or conftest.py:\n" + "\n".join(wrong)


def test_tests_use_no_private_name_of_the_package():
    """A test that imports `prunecheck...._name` freezes an implementation detail; what a test needs is public."""
    wrong = [f"tests/{name}.py:{line}: {module} {imported}" for name in MODULES + list(HELPERS)
             for line, module, imported in _imports(TESTS / f"{name}.py")
             if module.startswith("prunecheck") and imported.startswith("_") and not imported.startswith("__")]
    assert not wrong, "\n".join(wrong)
