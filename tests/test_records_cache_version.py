"""The records cache never outlives the code that parsed it.

A start takes parsed records from ``records.cache`` instead of parsing their files again, so a
cache written by other parsing code would serve records as that code parsed them. The cache's
version is ``records_cache.FORMAT`` (raised by hand) plus the versions of the libraries that
shape parsed data. This file pins a digest of the parsing code to ``FORMAT``: change any module
that parsing imports (``domain/record_files.py`` and everything it imports, ``domain/snapshot.py``,
``domain/record.py``) or the cache's own module, and the first test fails until ``FORMAT`` is
raised and the pin below updated. Comments and docstrings do not count: only the code does.
"""
from __future__ import annotations

import ast
import hashlib
import pickle
import sys
import threading
from importlib import metadata
from pathlib import Path

import pytest

import calendar_service
from calendar_service.storage import records_cache

from conftest import Client, remove_index, set_cached

PINNED_FORMAT = 15
PINNED_DIGEST = 'e0dc68968e2863a4c8b67a6aaecaf6ef2abb96ae1708234efe5193ca04303599'

PACKAGE = Path(calendar_service.__file__).parent
# what parsing a file and deriving a snapshot runs: these modules and everything they import
PARSING_ENTRIES = ("calendar_service.domain.record_files", "calendar_service.domain.snapshot",
                   "calendar_service.domain.record")
# the cache's layout, without what they import (the store, used only to read a file again)
CACHE_MODULES = ("calendar_service.storage.records_cache", "calendar_service.storage.file_date_columns")


def _path(module: str) -> Path | None:
    relative = Path(*module.split(".")[1:])
    for candidate in (PACKAGE / relative / "__init__.py", (PACKAGE / relative).with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _imported(path: Path):
    """The modules ``path`` imports, as dotted names (``from a import b`` gives ``a`` and ``a.b``)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)


def parsing_modules() -> dict[str, Path]:
    """Every module of the package that parsing runs (with the packages that hold them), by name."""
    found: dict[str, Path] = {}
    missing = [entry for entry in PARSING_ENTRIES + CACHE_MODULES if _path(entry) is None]
    assert not missing, f"no such module: {missing} (renamed? name it here)"
    pending = list(PARSING_ENTRIES)
    while pending:
        module = pending.pop()
        parts = module.split(".")
        for depth in range(2, len(parts) + 1):   # a package's __init__ runs before its modules
            name = ".".join(parts[:depth])
            path = _path(name)
            if path is not None and name not in found:
                found[name] = path
                pending.extend(m for m in _imported(path) if m.startswith("calendar_service."))
    for module in CACHE_MODULES:
        found[module] = _path(module)
    return found


def third_party_imports(modules: dict[str, Path]) -> set[str]:
    """Top-level names of the modules outside the package and the standard library they import."""
    names = set()
    for path in modules.values():
        for module in _imported(path):
            top = module.split(".")[0]
            if top != "calendar_service" and top not in sys.stdlib_module_names:
                names.add(top)
    return names


def _code_only(source: str) -> str:
    """The module's syntax tree without docstrings (what it does, not how it is explained) and
    without the ``FORMAT = N`` line itself, which is pinned beside the digest."""
    tree = ast.parse(source)
    tree.body = [node for node in tree.body if not (
        isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["FORMAT"])]
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


def digest(sources: dict[str, str]) -> str:
    hashed = hashlib.sha256()
    for name in sorted(sources):
        hashed.update(name.encode() + b"\0" + _code_only(sources[name]).encode() + b"\0")
    return hashed.hexdigest()


def current_sources() -> dict[str, str]:
    return {name: path.read_text(encoding="utf-8") for name, path in parsing_modules().items()}


def test_the_format_is_raised_whenever_the_parsing_code_changes():
    found = digest(current_sources())
    assert (records_cache.FORMAT, found) == (PINNED_FORMAT, PINNED_DIGEST), (
        "The code that parses record files (or the records cache's layout) changed, so a cache "
        "written before would serve records parsed by the old code. Raise FORMAT in "
        f"calendar_service/storage/records_cache.py to {PINNED_FORMAT + 1}, then set PINNED_FORMAT "
        f"to it and PINNED_DIGEST = {found!r} in {Path(__file__).name}.")


def test_the_digest_sees_code_and_ignores_explanations():
    sources = current_sources()
    name = "calendar_service.domain.booleans"
    assert name in sources   # a module parsing imports only indirectly is covered too
    base = digest(sources)
    explained = dict(sources, **{name: sources[name] + "\n# a comment\n"})
    assert digest(explained) == base
    changed = dict(sources, **{name: sources[name] + "\nEXTRA = 1\n"})
    assert digest(changed) != base
    recurrence = [n for n in sources if n.startswith("calendar_service.domain.recurrence.")]
    assert recurrence, "the recurrence rules shape parsed series: they must be covered"


def test_the_version_names_every_library_parsing_imports():
    # a library that parsing imports changes what the same bytes parse to when it is upgraded
    imported = third_party_imports(parsing_modules())
    assert imported, "the parsing modules import YAML and front-matter libraries"
    distributions = metadata.packages_distributions()
    for top in sorted(imported):
        names = distributions.get(top, [])
        assert any(name in records_cache.SHAPING_LIBRARIES for name in names), (
            f"parsing imports {top!r} (distribution {names}): add it to records_cache.SHAPING_LIBRARIES")
    version = records_cache.cache_version()
    assert version.startswith(f"records-{records_cache.FORMAT};")
    for name in records_cache.SHAPING_LIBRARIES:
        assert f"{name}={metadata.version(name)}" in version


def _wait_for_cache_writes():
    for thread in threading.enumerate():
        if thread.name == "calendar-records-cache":
            thread.join(10)


@pytest.fixture
def fresh_version():
    records_cache.cache_version.cache_clear()
    yield
    records_cache.cache_version.cache_clear()


def test_a_cache_written_under_another_format_is_not_read(paths, make_app, repo, factory, monkeypatch, fresh_version):
    from calendar_service.storage import catalog
    monkeypatch.setattr(catalog, "CACHE_MIN_FILES", 1)
    event = factory.event(title="From the file")
    remove_index(paths["index_dir"])
    make_app()
    _wait_for_cache_writes()
    cache = paths["index_dir"] / "records.cache"
    entries = pickle.loads(cache.read_bytes())
    set_cached(entries, repo.path_of(event["slug"]), title="From the cache")

    def title_after_a_start():
        cache.write_bytes(pickle.dumps(entries))
        answer = Client(make_app().test_client(), None).get(f"/events/{event['id']}").get_json()
        _wait_for_cache_writes()
        return answer["title"]

    # the same format: the (edited) cache is what a start serves
    assert title_after_a_start() == "From the cache"
    # code of another format ignores it and parses the file again
    monkeypatch.setattr(records_cache, "FORMAT", records_cache.FORMAT + 1)
    records_cache.cache_version.cache_clear()
    assert title_after_a_start() == "From the file"
