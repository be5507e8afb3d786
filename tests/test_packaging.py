"""What `pip install .` brings: the runtime packages only, the same ones requirements.txt lists."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# tools of the tests and benchmarks: never needed to run the service (nor its pre-commit hook)
TEST_TOOLS = {"pytest", "hypothesis", "schemathesis", "openapi-spec-validator", "vobject"}


def _name(requirement: str) -> str:
    """The normalised project name of a requirement line (PEP 503: case and -_. do not matter)."""
    return re.sub(r"[-_.]+", "-", re.split(r"[\s=<>!~;\[]", requirement.strip(), maxsplit=1)[0]).lower()


def _requirements(path: Path) -> dict[str, str]:
    """name -> requirement (comments and blank lines left out) of a requirements file."""
    found = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            found[_name(line)] = line.replace(" ", "")
    return found


def _declared() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "dependencies" not in project.get("dynamic", [])
    return {_name(r): r.replace(" ", "") for r in project["dependencies"]}


def test_pyproject_and_requirements_list_the_same_pinned_runtime():
    runtime = _requirements(ROOT / "requirements.txt")
    assert _declared() == runtime
    assert all("==" in r for r in runtime.values()), "runtime dependencies are pinned"


def test_no_test_tool_is_a_runtime_dependency():
    assert not TEST_TOOLS & set(_declared())
    assert not TEST_TOOLS & set(_requirements(ROOT / "requirements.txt"))


def test_dev_requirements_add_the_test_tools_to_the_runtime():
    lines = [l.split("#", 1)[0].strip() for l in (ROOT / "requirements-dev.txt").read_text(encoding="utf-8").splitlines()]
    assert "-r requirements.txt" in lines
    tools = {_name(l) for l in lines if l and not l.startswith("-")}
    assert TEST_TOOLS <= tools


def test_every_subpackage_is_found():
    """setuptools' discovery includes every folder of the package that has an __init__.py."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert config["packages"]["find"]["include"] == ["calendar_service*"]
    folders = {p.parent for p in (ROOT / "calendar_service").rglob("*.py")} - {ROOT / "calendar_service"}
    assert folders and all((folder / "__init__.py").exists() for folder in folders), "a folder without __init__.py is not shipped"
