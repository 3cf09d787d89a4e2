"""The layout's rules, checked on the source: no import cycle in src/, no module
too long to read at once. Every import counts: at module level, inside
functions and under `if TYPE_CHECKING:` (a cycle hidden there still ties two
modules together)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
MAX_LINES = 1000


def _modules() -> dict[str, tuple[Path, bool]]:
    """Every module of src/ by dotted name: (its file, whether it is a package)."""
    out = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        package = parts[-1] == "__init__"
        if package:
            parts = parts[:-1]
        out[".".join(parts)] = (path, package)
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of src/ it imports by name. `from P import x` counts
    as importing P.x when x is a module, else P; a parent package imported only
    implicitly (to reach its submodule) is not an edge."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, (path, package) in modules.items():
        here = name if package else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                edges.update(a.name for a in node.names if a.name in modules)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here.split(".")[: len(here.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    if sub in modules:
                        edges.add(sub)
                    elif target in modules:
                        edges.add(target)
        edges.discard(name)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_sees_every_kind_of_import():
    graph = import_graph()
    # absolute, relative, and `from package import module`
    assert "iotbench.world.workloads" in graph["iotbench.world.run"]
    assert "iotbench.proto.coap.observe" in graph["iotbench.proto.coap.resources"]
    assert "iotbench.net.ieee802154" in graph["iotbench.world.networks.pair"]


def test_cycles_are_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_in_src():
    assert cycles(import_graph()) == []


def test_no_module_over_the_line_limit():
    long = {
        str(path.relative_to(SRC)): n
        for path, _ in _modules().values()
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}


# What a run's settings are called below the loader: none of them may be read as a
# dict there (scenarios/settings.py turns a config into typed values once).
SETTINGS_NAMES = (
    r"config|settings|cfg|network|workload|protocol|coap|ndn|em|spec|link_cfg|radio_cfg|"
    r"nodes_cfg|routing|impair|both|own"
)
BELOW_THE_LOADER = ("iotbench/world", "iotbench/real/shim.py")


def test_no_settings_dict_is_read_below_the_loader():
    reads = re.compile(rf"\b({SETTINGS_NAMES})(\[\"|\.get\(\"|\.items\(\))")
    found = [
        f"{path.relative_to(SRC)}:{number}: {line.strip()}"
        for place in BELOW_THE_LOADER
        for path in (
            [SRC / place] if place.endswith(".py") else sorted((SRC / place).rglob("*.py"))
        )
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if reads.search(line)
    ]
    assert found == []


def test_the_settings_check_sees_a_dict_read():
    reads = re.compile(rf"\b({SETTINGS_NAMES})(\[\"|\.get\(\"|\.items\(\))")
    assert reads.search('rate = config["network"]')
    assert reads.search('x = cfg.get("retx_max", 0)')
    assert not reads.search("rate = config.network.link.rate_bps")
