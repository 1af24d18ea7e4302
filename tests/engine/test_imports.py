"""The engine's import structure: imports at the top of each module, no module-level cycle,
and no lower floor importing a higher one."""

import ast
import pathlib

ENGINE = pathlib.Path(__file__).resolve().parents[2] / "engine"

# Floors, lowest first: a module may import its own floor and the ones below.
FLOORS = [
    {
        "engine.dtypes",
        "engine.tensor_shape",
        "engine.errors",
        "engine.config",
        "engine.threads",
        "engine.version",
    },
    {"engine.util", "engine.devices"},
    {"engine.framework"},
    {"engine.ops", "engine.gradients", "engine.init_ops", "engine.graph_inspection"},
    {"engine.runtime", "engine.session", "engine.variables", "engine.variable_scope"},
]

# Function-local imports that remain, each breaking what would be a module-level cycle
# between op families (or a family and the module building on it). This list only shrinks.
LOCAL_IMPORTS = {
    ("engine.devices", "cupy"),  # optional dependency, imported on first use
    ("engine.ops._common", "cupyx"),  # optional dependency
    ("engine.ops.array", "engine.ops.math"),
    ("engine.ops.array", "engine.ops.reduction"),
    ("engine.ops.array_transform", "engine.ops.reduction"),
    ("engine.ops.array_transform", "engine.ops.slicing"),
    ("engine.ops.grad_util", "engine.ops.array_transform"),
    ("engine.ops.math", "engine.ops.slicing"),
    ("engine.training.saver", "engine.saving.meta_graph"),
}


def _modules() -> dict[str, pathlib.Path]:
    out = {}
    for p in ENGINE.rglob("*.py"):
        parts = list(p.relative_to(ENGINE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


MODULES = _modules()


def _imported(node) -> list[str]:
    """The modules an import statement names (``from pkg import mod`` names ``pkg.mod``)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]


def _imports(path) -> tuple[set[str], set[str]]:
    """(modules imported at the top level, modules imported inside functions)."""
    tree = ast.parse(path.read_text())
    top = {
        m for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)) for m in _imported(n)
    }
    local = set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for n in ast.walk(fn):
                if isinstance(n, (ast.Import, ast.ImportFrom)):
                    local.update(_imported(n))
    return top, local


IMPORTS = {m: _imports(p) for m, p in MODULES.items()}


def _floor(module: str) -> int | None:
    for i, floor in enumerate(FLOORS):
        if any(module == f or module.startswith(f + ".") for f in floor):
            return i
    return None


def test_no_function_local_imports_beyond_the_shrinking_list():
    found = {(m, i) for m, (_, local) in IMPORTS.items() for i in local}
    assert found <= LOCAL_IMPORTS, f"new function-local imports: {sorted(found - LOCAL_IMPORTS)}"
    assert LOCAL_IMPORTS <= found, f"gone, remove from the list: {sorted(LOCAL_IMPORTS - found)}"


def test_no_module_level_import_cycle():
    # The ``engine`` namespace re-exports everything; only the CLI, on top, imports it.
    graph = {
        m: {i for i in top if i in MODULES and i != "engine" and i != m}
        for m, (top, _) in IMPORTS.items()
        if m != "engine"
    }
    assert [m for m, (top, _) in IMPORTS.items() if "engine" in top] == ["engine.cli"]
    state: dict[str, int] = {}

    def visit(m, path):
        state[m] = 1
        for n in sorted(graph.get(m, ())):
            assert state.get(n) != 1, "import cycle: " + " -> ".join(path + [n])
            if n not in state:
                visit(n, path + [n])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])


def test_no_lower_floor_imports_a_higher_one():
    upward = []
    for m, (top, local) in IMPORTS.items():
        mine = _floor(m)
        if mine is None:
            continue
        for i in top | local:
            theirs = _floor(i) if i.startswith("engine.") else None
            if i.startswith("engine.") and (theirs is None or theirs > mine):
                upward.append(f"{m} -> {i}")
    assert not upward, upward
