"""The package's folders are its layers, and imports run one way only.

    http -> service -> {index, storage} -> domain

auth and config sit beside domain, under everything that needs them; the index does not
use the store (the service passes it the records); the command line drives the service, the
store and the index. A module that imports a layer it may not use fails here, with the file
and the import named.
"""
from __future__ import annotations

import ast
import warnings
from pathlib import Path

import calendar_service

PACKAGE = Path(calendar_service.__file__).parent

# layer -> the layers its modules may import (besides themselves)
ALLOWED = {
    "domain": set(),
    "config": {"domain"},
    "auth": {"domain", "config"},
    "storage": {"domain", "config"},
    "index": {"domain", "config"},
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



# Size is a signal, not a rule: past the soft bounds a module or class is reported as a warning
# (look for a concern to move out); only the hard bounds fail. Split by concern, never by count.
SOFT_MODULE_LINES, HARD_MODULE_LINES = 550, 900
SOFT_CLASS_LINES, HARD_CLASS_LINES = 320, 500


def size_report(package: Path) -> tuple[list[str], list[str]]:
    """(past the hard bounds, past only the soft bounds) for the modules and classes of ``package``."""
    hard_list, soft_list = [], []
    for path in sorted(package.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        where = str(path.relative_to(package))
        sized = [(where, text.count("\n"), SOFT_MODULE_LINES, HARD_MODULE_LINES)]
        sized += [(f"{where}: class {node.name}", node.end_lineno - node.lineno, SOFT_CLASS_LINES, HARD_CLASS_LINES)
                  for node in ast.walk(ast.parse(text)) if isinstance(node, ast.ClassDef)]
        for name, lines, soft, hard in sized:
            if lines > hard:
                hard_list.append(f"{name}: {lines} lines (at most {hard})")
            elif lines > soft:
                soft_list.append(f"{name}: {lines} lines, past {soft}: is there a concern to move out?")
    return hard_list, soft_list


def test_modules_and_classes_stay_small():
    too_big, large = size_report(PACKAGE)
    for text in large:
        warnings.warn(text, stacklevel=1)
    assert not too_big, "\n".join(too_big)


def test_the_size_check_warns_then_fails(tmp_path):
    module = tmp_path / "big.py"
    module.write_text("class Big:\n" + "    x = 1\n" * (SOFT_CLASS_LINES + 5))
    too_big, large = size_report(tmp_path)
    assert not too_big and len(large) == 1 and "class Big" in large[0]
    module.write_text("class Big:\n" + "    x = 1\n" * (HARD_CLASS_LINES + 5))
    too_big, _ = size_report(tmp_path)
    assert len(too_big) == 1 and "class Big" in too_big[0]
