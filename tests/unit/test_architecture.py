"""The architecture as a test: the import contract of ``pyproject.toml``
(``[tool.importlinter]``: the stages import one way, and inside ``ops`` the CLI sits on
top of eval and bench, the API beside the workers, then the use cases and the wiring), and
no import cycle anywhere in memledger's packages."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import get_args

import grimp
from importlinter.cli import lint_imports

from observations.entry import KINDS
from ops.api.models import Kind

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("ledger", "observations", "materializers", "retrieval", "consolidation", "ops")


def test_the_import_contract_holds() -> None:
    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True) == 0


def cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The import cycles of the graph: its strongly connected components of two or more
    modules (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph.modules):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            module, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    imported = sorted(graph.find_modules_directly_imported_by(target))
                    work.append((target, iter(imported)))
                    break
                if target in on_stack:
                    low[module] = min(low[module], index[target])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[module])
                if low[module] == index[module]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == module:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_import_cycle() -> None:
    sys.path.insert(0, str(ROOT))
    graph = grimp.build_graph(*PACKAGES, exclude_type_checking_imports=True)
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = grimp.ImportGraph()
    for a, b in [("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d")]:
        graph.add_import(importer=a, imported=b)
    assert cycles(graph) == [["p.a", "p.b", "p.c"]]


def test_the_api_takes_exactly_the_entry_kinds() -> None:
    """The API's ``Kind`` is a literal for the OpenAPI document; it must be the entry's."""
    assert get_args(Kind) == KINDS
