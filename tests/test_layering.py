"""The preload runtime's layers depend downward only (issue 13; docs/DESIGN.md §0).

src/run/runtime has one folder per layer, top to bottom: entry (the interposed libc names), copy
(the copy's life cycle), core (per-process state, statistics, the control region), sandbox,
policy; below them src/kernel and src/common. These tests read the sources' includes and the
built objects' symbols (the build's own record of who calls whom) and fail on:
- an include or a call from a layer to a layer above it;
- a cycle among the runtime's files, by includes or by calls;
- code below the entry layer that refers to a name libspecx.so interposes (inside the library
  that name is the runtime's own wrapper: calling it re-enters the runtime);
- an exported symbol defined anywhere but in the entry layer.
"""
import json
import re
import subprocess

import pytest

from conftest import BUILD, REPO

RUNTIME = REPO / "src" / "run" / "runtime"
LAYERS = ["policy", "sandbox", "core", "copy", "entry"]  # bottom to top
BELOW = 0  # src/kernel and src/common
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def rank(module):
    """A module is a path relative to src/ without extension: run/runtime/copy/copy,
    kernel/maps."""
    parts = module.split("/")
    if parts[:2] == ["run", "runtime"]:
        return LAYERS.index(parts[2]) + 1
    return BELOW


def module_of(path):
    return str(path.relative_to(REPO / "src").with_suffix(""))


def resolve_include(source, name):
    """The module an include names: every include of a project header is its path under src/."""
    candidate = REPO / "src" / name
    if candidate.exists():
        return module_of(candidate)
    raise AssertionError(f"{source}: #include \"{name}\" names no header under src/")


def runtime_sources():
    return sorted(p for p in RUNTIME.rglob("*") if p.suffix in (".c", ".h"))


def include_graph():
    graph = {}
    for path in runtime_sources():
        module = module_of(path)
        for name in INCLUDE.findall(path.read_text()):
            target = resolve_include(path.relative_to(REPO), name)
            if target != module:
                graph.setdefault(module, set()).add(target)
    return graph


def find_cycle(graph):
    """One cycle of the graph as a list of modules, or None."""
    state = {}

    def visit(node, stack):
        state[node] = "open"
        stack.append(node)
        for succ in sorted(graph.get(node, ())):
            if state.get(succ) == "open":
                return stack[stack.index(succ):] + [succ]
            if succ not in state:
                found = visit(succ, stack)
                if found:
                    return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node, [])
            if found:
                return found
    return None


def upward_edges(graph):
    return sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets
                  if rank(b) > rank(a))


def test_every_runtime_file_is_in_a_layer():
    loose = [p.name for p in RUNTIME.iterdir() if p.suffix in (".c", ".h")]
    assert not loose, f"files outside the layer folders: {loose}"
    folders = sorted(p.name for p in RUNTIME.iterdir() if p.is_dir())
    assert folders == sorted(LAYERS)


def test_includes_point_downward_without_cycles():
    graph = include_graph()
    assert not upward_edges(graph), upward_edges(graph)
    assert find_cycle(graph) is None, find_cycle(graph)


# --- the built objects ---

def nm(obj, *flags):
    out = subprocess.run(["nm", *flags, str(obj)], capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


def runtime_objects():
    """(module, object) for every object of libspecx.so and the libraries linked into it."""
    commands = json.loads((BUILD / "compile_commands.json").read_text())
    objects = {}
    for entry in commands:
        source = (BUILD / entry["file"]).resolve()
        output = BUILD / entry["output"]
        module = module_of(source) if (REPO / "src") in source.parents else ""
        below = module.split("/")[0] in ("kernel", "common")
        if (module.startswith("run/runtime/") or below) and \
                re.search(r"libspecx[-.\w]*\.(so|a)\.p/", entry["output"]):
            objects[module] = output
    return objects


@pytest.fixture(scope="module")
def objects():
    found = runtime_objects()
    if not found:
        pytest.skip(f"no runtime objects in {BUILD} (build first)")
    return found


def defined_and_undefined(obj):
    defined, undefined = set(), set()
    for line in nm(obj):
        fields = line.split()
        if len(fields) == 2 and fields[0] == "U":
            undefined.add(fields[1])
        elif len(fields) == 3 and fields[1] in "TDBRC":  # global text, data, bss, rodata, common
            defined.add(fields[2])
    return defined, undefined


def interposed_names():
    return {line.split()[-1] for line in nm(BUILD / "src/run/runtime/libspecx.so", "-D",
                                             "--defined-only")}


def test_calls_point_downward_without_cycles(objects):
    symbols = {name: defined_and_undefined(obj) for name, obj in objects.items()}
    owner = {sym: module for module, (defined, _) in symbols.items() for sym in defined}
    graph = {module: {owner[sym] for sym in undefined if sym in owner} - {module}
             for module, (_, undefined) in symbols.items()}
    assert not upward_edges(graph), upward_edges(graph)
    assert find_cycle(graph) is None, find_cycle(graph)


def test_only_the_entry_layer_reaches_interposed_names(objects):
    interposed = interposed_names()
    below = {module: sorted(defined_and_undefined(obj)[1] & interposed)
             for module, obj in objects.items() if not module.startswith("run/runtime/entry/")}
    assert not {m: names for m, names in below.items() if names}


def test_libspecx_exports_only_what_the_entry_layer_defines(objects):
    entry = set()
    for module, obj in objects.items():
        if module.startswith("run/runtime/entry/"):
            entry |= defined_and_undefined(obj)[0]
    assert interposed_names() <= entry, interposed_names() - entry
