"""The package's folders are its layers, and imports run one way only.

http -> service -> index -> storage -> domain (auth and config sit beside domain, under
everything that needs them); the command line drives the service and the store. A module
that imports a layer it may not use fails here, with the file and the import named.
"""
from __future__ import annotations

import ast
from pathlib import Path

import calendar_service

PACKAGE = Path(calendar_service.__file__).parent

# layer -> the layers its modules may import (besides themselves)
ALLOWED = {
    "domain": set(),
    "config": {"domain"},
    "auth": {"domain", "config"},
    "storage": {"domain", "config"},
    "index": {"domain", "config", "storage"},
    "service": {"domain", "config", "auth", "storage", "index"},
    "http": {"domain", "config", "auth", "service"},
    "cli": {"domain", "config", "auth", "storage", "index", "service"},
}
ENTRY_POINTS = {"__init__", "__main__", "bench"}  # the package's own doors: create_app, the command line,
# and `python -m calendar_service.bench` (hands over to benchmarks/, which is not shipped)


def _layer(path: Path) -> str:
    relative = path.relative_to(PACKAGE).parts
    return relative[0] if len(relative) > 1 else relative[0][:-3]


def _imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            yield node.lineno, "<relative import>"
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.lineno, node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name


def test_every_module_lives_in_a_known_layer():
    for path in PACKAGE.rglob("*.py"):
        layer = _layer(path)
        assert layer in ALLOWED or layer in ENTRY_POINTS, f"{path}: not in a layer folder"


def test_imports_run_one_way():
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        layer = _layer(path)
        if layer in ENTRY_POINTS:
            continue
        for line, module in _imports(path):
            if module == "<relative import>":
                wrong.append(f"{path.relative_to(PACKAGE)}:{line}: relative import (use the full module path)")
                continue
            parts = module.split(".")
            if parts[0] != "calendar_service":
                continue
            target = parts[1] if len(parts) > 1 else "__init__"
            if target != layer and target not in ALLOWED[layer]:
                wrong.append(f"{path.relative_to(PACKAGE)}:{line}: {layer} imports {module}")
    assert not wrong, "\n".join(wrong)


def test_the_checker_sees_a_wrong_arrow(tmp_path, monkeypatch):
    # the rule itself is tested: a storage module importing http must be reported
    fake = tmp_path / "calendar_service"
    (fake / "storage").mkdir(parents=True)
    (fake / "storage" / "bad.py").write_text("from calendar_service.http.api import bp\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", fake)
    try:
        test_imports_run_one_way()
    except AssertionError as exc:
        assert "storage imports calendar_service.http.api" in str(exc)
    else:
        raise AssertionError("the wrong arrow was not reported")



MAX_MODULE_LINES = 550   # a module is one concern: split it when it grows past this
MAX_CLASS_LINES = 320    # a class that grows past this holds collaborators instead


def test_modules_and_classes_stay_small():
    too_big = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.count("\n")
        if lines > MAX_MODULE_LINES:
            too_big.append(f"{path.relative_to(PACKAGE)}: {lines} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno > MAX_CLASS_LINES:
                too_big.append(f"{path.relative_to(PACKAGE)}: class {node.name} {node.end_lineno - node.lineno} lines")
    assert not too_big, "\n".join(too_big)
