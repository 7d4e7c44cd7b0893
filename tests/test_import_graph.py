"""The import graph of ``src/tapeflow`` runs one way (issue 20, item 2).

Every module is parsed with ``ast``; module-level *and* function-level imports count (an import
moved into a function to dodge a circle still ties the two modules together), relative imports are
resolved, and ``from package import name`` points at the submodule when ``name`` is one, else at
the package's ``__init__``. Imports under ``if TYPE_CHECKING:`` never run and are left out.
Importing ``a.b.c`` also runs ``a/__init__`` and ``a/b/__init__``, but those parents are not
edges here: every module would then import ``tapeflow/__init__``, which imports everything.
"""
import ast
import functools
import pathlib


SOURCE = pathlib.Path(__file__).resolve().parents[1] / "src" / "tapeflow"
ROOT = "tapeflow"


def _module_names():
    """{dotted module name: path} for every ``.py`` file under src/tapeflow."""
    names = {}
    for path in sorted(SOURCE.rglob("*.py")):
        parts = (ROOT,) + path.relative_to(SOURCE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def _is_type_checking(test):
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(tree):
    """Every Import/ImportFrom in the tree, at any depth, except under ``if TYPE_CHECKING:``."""
    pending = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            pending.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        pending.extend(ast.iter_child_nodes(node))


def _imported(module, is_package, node, modules):
    """The tapeflow modules one import statement in ``module`` names."""
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
        return {name for name in targets if name in modules}
    if node.level:  # relative: ``from ..x import y`` inside tapeflow.a.b -> tapeflow.x
        package = module.split(".") if is_package else module.split(".")[:-1]
        package = package[:len(package) - (node.level - 1)]
        base = ".".join(package + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    if base != ROOT and not base.startswith(ROOT + "."):
        return set()
    found = set()
    for alias in node.names:
        submodule = f"{base}.{alias.name}"
        if submodule in modules:
            found.add(submodule)
        elif base in modules:
            found.add(base)
    return found


@functools.cache
def import_graph():
    """{module: set of tapeflow modules it imports}, over every module of src/tapeflow."""
    modules = _module_names()
    graph = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        edges = set()
        for node in _import_nodes(tree):
            edges |= _imported(module, is_package, node, modules)
        edges.discard(module)
        graph[module] = edges
    return graph


def cycles(graph):
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative,
    so a deep graph cannot hit Python's recursion limit), each sorted, in sorted order."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def _shortest_loop(graph, component):
    """One shortest circle through the component's first module, for a readable failure."""
    members = set(component)
    start = component[0]
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & members):
                if child == start:
                    return paths[node] + [start]
                if child not in paths:
                    paths[child] = paths[node] + [child]
                    following.append(child)
        frontier = following
    return component


def test_cycle_finder_finds_a_planted_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert _shortest_loop(graph, ["a", "b", "c"]) == ["a", "b", "c", "a"]


def test_relative_and_function_level_imports_are_edges():
    modules = {"tapeflow", "tapeflow.x", "tapeflow.x.y", "tapeflow.z"}
    tree = ast.parse("def f():\n    from ..z import name\n    from . import y\n"
                     "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..z import w\n")
    edges = set()
    for node in _import_nodes(tree):
        edges |= _imported("tapeflow.x.q", False, node, modules)
    assert edges == {"tapeflow.z", "tapeflow.x.y"}


def test_import_graph_has_no_circle():
    graph = import_graph()
    assert len(graph) > 100 and graph["tapeflow.models.model"]  # the parse really ran
    found = cycles(graph)
    described = ["\n  " + " -> ".join(_shortest_loop(graph, c)) + f"  ({len(c)} modules: "
                 + ", ".join(c) + ")" for c in found]
    assert not found, "import circles in src/tapeflow:" + "".join(described)
