"""The import graph of claimdesk's own modules, read from the source with `ast` (nothing is
imported): no import cycle between project modules, jobs below the apps (it imports neither
annotate nor evaluation: each app registers its kinds of job, jobs.kinds), and no import
inside a function, but for a deliberate late import of a heavy library, marked
`# late import: heavy library (memory)` on its line or the one above (what a worker loads is
pinned by tests/test_lean_workers.py).

A late import of a project module still counts in the cycle check: the mark says why it is
late (memory), it cannot hide a cycle."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The project's packages, by the name they are imported as (tests/ and bench/ are not).
PACKAGES = {
    "annotate": ROOT / "annotate",
    "evaluation": ROOT / "evaluation",
    "jobs": ROOT / "jobs",
    "config": ROOT / "config",
    "sso": ROOT / "sso",
    "claimdesk_client": ROOT / "client" / "claimdesk_client",
}
SCRIPTS = {"manage": ROOT / "manage.py"}
LATE_IMPORT = "# late import: heavy library (memory)"
BELOW_THE_APPS = ("jobs",)
APPS = ("annotate", "evaluation")

# The one edge left out of the cycle check: the client's module reads the package's
# __version__, which must stay a literal in claimdesk_client/__init__.py (setuptools reads it
# there without importing the package: client/pyproject.toml, tests/client/test_package.py),
# and __init__ imports the client. The usual idiom, in a distribution of its own.
NOT_A_CYCLE = {("claimdesk_client.client", "claimdesk_client")}

# Imports let through, by module -> the functions whose imports pass ("*": the whole module,
# jobs' rule included). Empty: it held the report code that #35.2 moved out of jobs.
REPORTS_WORK: dict[str, set[str]] = {}


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    targets: tuple[str, ...]  # the project modules it names
    line: int
    function: str | None  # the enclosing function's qualified name, None at module level
    marked: bool  # marked as a late import of a heavy library
    text: str

    def let_through(self, allowed: dict[str, set[str]]) -> bool:
        functions = allowed.get(self.module, set())
        return "*" in functions or (self.function is not None and self.function in functions)


def project_modules() -> dict[str, Path]:
    found = dict(SCRIPTS)
    for package, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = [package, *path.relative_to(folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool, known) -> tuple:
    """The project modules an import statement loads: `from a.b import c` is a.b.c when that
    is a module, else a.b; relative imports resolved against `module`."""
    out: list[str] = []
    if isinstance(node, ast.Import):
        for alias in node.names:
            name = alias.name
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name:
                out.append(name)
        return tuple(out)
    base = node.module or ""
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join([*package, base] if base else package)
    for alias in node.names:
        if f"{base}.{alias.name}" in known:
            out.append(f"{base}.{alias.name}")
        elif base in known:
            out.append(base)
    return tuple(out)


def imports_of(source: str, module: str, known, *, is_package: bool = False) -> list[Import]:
    """Every import statement of `source` (the module `module`), with where it stands."""
    lines = source.splitlines()
    found: list[Import] = []

    def marked(node) -> bool:
        own = lines[node.lineno - 1 : node.end_lineno]
        above = lines[node.lineno - 2 : node.lineno - 1] if node.lineno > 1 else []
        return any(LATE_IMPORT in line for line in [*above, *own])

    def walk(node, function: str | None, scope: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                found.append(
                    Import(
                        module=module,
                        targets=_targets(child, module, is_package, known),
                        line=child.lineno,
                        function=function,
                        marked=marked(child),
                        text=ast.get_source_segment(source, child) or "",
                    )
                )
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                name = getattr(child, "name", "<lambda>")
                qualified = f"{scope}.{name}" if scope else name
                walk(child, qualified, qualified)
            elif isinstance(child, ast.ClassDef):
                walk(child, function, f"{scope}.{child.name}" if scope else child.name)
            else:
                walk(child, function, scope)

    walk(ast.parse(source), None, "")
    return found


def all_imports() -> list[Import]:
    modules = project_modules()
    found = []
    for name, path in modules.items():
        found += imports_of(
            path.read_text(encoding="utf-8"), name, modules, is_package=path.name == "__init__.py"
        )
    return found


# --- The rules, on any list of imports ----------------------------------------------------


def graph(imports: list[Import], allowed: dict[str, set[str]]) -> dict[str, set[str]]:
    """Module -> the project modules it imports, wherever the import stands (a late import
    is still a dependency), but for the imports `allowed` lets through."""
    edges: dict[str, set[str]] = {}
    for found in imports:
        edges.setdefault(found.module, set())
        if found.function is not None and found.let_through(allowed):
            continue
        edges[found.module].update(
            t for t in found.targets if t != found.module and (found.module, t) not in NOT_A_CYCLE
        )
    return edges


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """A cycle of the graph as the path that closes it (['a', 'b', 'a']), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for following in sorted(edges.get(node, ())):
            if state.get(following) == 1:
                return [*path[path.index(following) :], following]
            if following not in state:
                cycle = visit(following)
                if cycle:
                    return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(edges):
        if start not in state:
            cycle = visit(start)
            if cycle:
                return cycle
    return None


def reaching_up(imports: list[Import], allowed: dict[str, set[str]]) -> list[str]:
    """Imports by a module of jobs of a module of annotate or evaluation."""
    return [
        f"{found.module}:{found.line}: {found.text}"
        for found in imports
        if found.module.split(".")[0] in BELOW_THE_APPS
        and any(t.split(".")[0] in APPS for t in found.targets)
        and "*" not in allowed.get(found.module, set())
    ]


def unmarked_late_imports(imports: list[Import], allowed: dict[str, set[str]]) -> list[str]:
    return [
        f"{found.module}:{found.line} ({found.function}): {found.text}"
        for found in imports
        if found.function is not None and not found.marked and not found.let_through(allowed)
    ]


# --- The project -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def project_imports() -> list[Import]:
    return all_imports()


def test_the_scan_sees_the_project(project_imports):
    """The graph is read from the files: the apps, jobs and the settings are in it, and
    annotate's tasks module imports jobs (a scan that found nothing would pass anything)."""
    modules = {found.module for found in project_imports}
    assert {"annotate.models", "evaluation.tasks", "jobs.services", "config.settings"} <= modules
    edges = graph(project_imports, REPORTS_WORK)
    assert {"jobs.kinds", "jobs.services", "annotate.imports.bundle_import"} <= edges[
        "annotate.tasks"
    ]
    assert any(found.marked for found in project_imports)


def test_no_import_cycle_between_project_modules(project_imports):
    cycle = find_cycle(graph(project_imports, REPORTS_WORK))
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_jobs_imports_neither_annotate_nor_evaluation(project_imports):
    assert reaching_up(project_imports, REPORTS_WORK) == []


def test_no_import_inside_a_function_but_a_marked_late_import_of_a_heavy_library(
    project_imports,
):
    assert unmarked_late_imports(project_imports, REPORTS_WORK) == []


# --- The rules can fail ----------------------------------------------------------------------

KNOWN = {"jobs", "jobs.services", "jobs.tasks", "annotate", "annotate.models", "annotate.tasks"}


def test_a_cycle_is_found_and_reported_as_its_path():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a": {"a"}}) == ["a", "a"]


def test_a_late_import_that_dodges_a_cycle_is_refused_twice():
    """jobs.services importing jobs.tasks inside a function, and jobs.tasks importing
    jobs.services at the top: an unmarked late import, and a cycle all the same."""
    services = "from jobs import models\n\ndef enqueue():\n    from jobs.tasks import run_job\n"
    tasks = "from jobs import services\n"
    imports = [
        *imports_of(services, "jobs.services", KNOWN),
        *imports_of(tasks, "jobs.tasks", KNOWN),
    ]
    assert unmarked_late_imports(imports, {}) == [
        "jobs.services:4 (enqueue): from jobs.tasks import run_job"
    ]
    assert find_cycle(graph(imports, {})) == ["jobs.services", "jobs.tasks", "jobs.services"]
    # A mark says why an import is late; it does not hide the cycle.
    marked = services.replace("    from jobs.tasks", f"    {LATE_IMPORT}\n    from jobs.tasks")
    imports = [*imports_of(marked, "jobs.services", KNOWN), *imports_of(tasks, "jobs.tasks", KNOWN)]
    assert unmarked_late_imports(imports, {}) == []
    assert find_cycle(graph(imports, {})) is not None


def test_only_the_mark_on_the_line_or_the_one_above_lets_a_late_import_through():
    source = (
        "class Report:\n"
        "    def compute(self):\n"
        f"        import numpy  {LATE_IMPORT}\n"
        f"        {LATE_IMPORT}\n"
        "        import scipy\n"
        f"        {LATE_IMPORT}\n"
        "\n"
        "        import sklearn  # here, not at the top\n"
    )
    found = imports_of(source, "evaluation.report", KNOWN)
    assert [(i.text, i.function, i.marked) for i in found] == [
        ("import numpy", "Report.compute", True),
        ("import scipy", "Report.compute", True),
        ("import sklearn", "Report.compute", False),
    ]
    assert unmarked_late_imports(found, {}) == [
        "evaluation.report:8 (Report.compute): import sklearn"
    ]
    assert unmarked_late_imports(found, {"evaluation.report": {"Report.compute"}}) == []


def test_jobs_importing_an_app_is_refused_wherever_the_import_stands():
    source = "from annotate.models import Project\n\ndef run():\n    import annotate.tasks\n"
    found = imports_of(source, "jobs.services", KNOWN)
    assert reaching_up(found, {}) == [
        "jobs.services:1: from annotate.models import Project",
        "jobs.services:4: import annotate.tasks",
    ]
    # The apps may import jobs.
    assert reaching_up(imports_of("from jobs import services\n", "annotate.tasks", KNOWN), {}) == []
