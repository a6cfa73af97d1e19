"""src/ is built in layers that depend downward only (docs/design/README.md).

Every folder of src/ is a layer. From the top: cli, the dispatcher; the commands run, share,
idle, slowfs and doctor, peers that never use each other; inside run, the launcher above the
supervisor and the history (peers: the history stands on the runtime's policy layer alone)
above the preload runtime's layers (entry, the interposed libc names; copy, the copy's life
cycle and its reads; refork and faults, peers: the fast refork, and speculation on the copy's
page faults; running, what a running copy is made of; core, per-process state, statistics,
the control region; sandbox; policy); kernel; common at the bottom.

A unit is a header together with the .c files behind it: its own (x.h and x.c), and any other
of its folder that defines what it declares (lazy_memory.h fronts lazy_regions.c and
lazy_fill.c). These tests read the sources' includes, the static inline functions of headers
and the built objects' symbols (the build's own record of who calls whom) and fail on:
- an include or a call from a layer to one above it or beside it;
- a cycle among the units, by includes, inline functions and calls together;
- code of the preload runtime below its entry layer that refers to a name libspecx.so
  interposes (inside the library that name is the runtime's own wrapper: calling it re-enters
  the runtime);
- an exported symbol of libspecx.so defined anywhere but in the entry layer.
"""
import json
import re
import subprocess

import pytest

from conftest import BUILD, REPO

SRC = REPO / "src"
RUNTIME_LAYERS = ["policy", "sandbox", "core", "running", "refork", "faults", "copy",
                  "entry"]  # bottom to top (refork and faults are peers)
# Each layer and the layers right below it; a layer may use those and what they may use.
LAYERS = {
    "common": [],
    "kernel": ["common"],
    "run/runtime/policy": ["kernel"],
    "run/runtime/sandbox": ["run/runtime/policy"],
    "run/runtime/core": ["run/runtime/sandbox"],
    "run/runtime/running": ["run/runtime/core"],
    "run/runtime/refork": ["run/runtime/running"],
    "run/runtime/faults": ["run/runtime/running"],
    "run/runtime/copy": ["run/runtime/refork", "run/runtime/faults"],
    "run/runtime/entry": ["run/runtime/copy"],
    "run/supervisor": ["run/runtime/sandbox"],
    "run/history": ["run/runtime/policy"],
    "run": ["run/supervisor", "run/history"],
    "share": ["kernel"],
    "idle": ["kernel"],
    "slowfs": ["kernel"],
    "doctor": ["kernel"],
    "cli": ["run", "share", "idle", "slowfs", "doctor"],
}
OPTIONAL = {"doctor"}  # a command folder the tree may not have yet
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
COMMENT_OR_STRING = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                               re.S)
STATIC_INLINE = re.compile(r'\bstatic\s+inline\b[^;{=]*?\b(\w+)\s*\(')


def below(layer):
    """Every layer LAYER may use."""
    found = set()
    for lower in LAYERS[layer]:
        found |= {lower} | below(lower)
    return found


def module_of(path):
    """A path relative to src/ without extension: run/runtime/copy/copy, kernel/maps."""
    return str(path.relative_to(SRC).with_suffix(""))


def layer_of(module):
    return module.rsplit("/", 1)[0]


def sources():
    return sorted(p for p in SRC.rglob("*") if p.suffix in (".c", ".h"))


def code_of(path):
    """The text of PATH without comments and literals, where names are only code."""
    return COMMENT_OR_STRING.sub(" ", path.read_text())


def includes(path):
    return [SRC / name for name in INCLUDE.findall(path.read_text())]


def test_every_folder_is_a_layer():
    folders = {str(p.parent.relative_to(SRC)) for p in sources()}
    assert folders <= set(LAYERS), f"folders in no layer: {sorted(folders - set(LAYERS))}"
    assert set(LAYERS) - OPTIONAL <= folders, sorted(set(LAYERS) - OPTIONAL - folders)
    runtime = SRC / "run" / "runtime"
    assert sorted(p.name for p in runtime.iterdir() if p.is_dir()) == sorted(RUNTIME_LAYERS)
    assert not [p.name for p in runtime.iterdir() if p.suffix in (".c", ".h")]


def test_includes_name_a_header_by_its_path_under_src():
    wrong = [f"{path.relative_to(REPO)}: {target.relative_to(SRC)}" for path in sources()
             for target in includes(path) if not target.is_file()]
    assert not wrong, wrong


# --- the built objects ---

def nm(obj, *flags):
    out = subprocess.run(["nm", *flags, str(obj)], capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


def defined_and_undefined(obj):
    defined, undefined = set(), set()
    for line in nm(obj):
        fields = line.split()
        if len(fields) == 2 and fields[0] == "U":
            undefined.add(fields[1])
        elif len(fields) == 3 and fields[1] in "TDBRC":  # global text, data, bss, rodata, common
            defined.add(fields[2])
    return defined, undefined


def source_objects():
    """{source path: (target, object)} for every source of src/ the build compiled (one object
    each: a source compiled for several targets defines the same names in each)."""
    commands = json.loads((BUILD / "compile_commands.json").read_text())
    objects = {}
    for entry in commands:
        source = (BUILD / entry["file"]).resolve()
        if SRC in source.parents:
            target = entry["output"].split("/")[-2]
            if source not in objects or target.startswith("libspecx"):
                objects[source] = (target, BUILD / entry["output"])
    return objects


def symbols_of_objects():
    """{source path: (target, defined names, undefined names)}."""
    return {source: (target, *defined_and_undefined(obj))
            for source, (target, obj) in source_objects().items()}


@pytest.fixture(scope="module")
def symbols():
    found = symbols_of_objects()
    if not found:
        pytest.skip(f"no objects in {BUILD} (build first)")
    return found


def interposed_names():
    return {line.split()[-1] for line in nm(BUILD / "src/run/runtime/libspecx.so", "-D",
                                             "--defined-only")}


def units_of(symbols):
    """{source path: the name of its unit}: a header and the .c files of its folder that
    define a name it declares (an interposed name does not count: entry files define those
    and do not front the headers that mention them)."""
    interposed = interposed_names()
    parent = {path: path for path in sources()}

    def root(path):
        while parent[path] != path:
            path = parent[path]
        return path

    def join(a, b):
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    for path in sources():
        if path.suffix == ".c":
            own = path.with_suffix(".h")
            if own.exists():
                join(path, own)
            defined = symbols.get(path, ("", set(), set()))[1] - interposed
            for header in includes(path):
                if header.parent == path.parent and \
                        defined & set(re.findall(r"\w+", code_of(header))):
                    join(path, header)
    groups = {}
    for path in sources():
        groups.setdefault(root(path), []).append(path)
    name = {}
    for members in groups.values():
        headers = [p for p in members if p.suffix == ".h"] or members
        for path in members:
            name[path] = module_of(min(headers))
    return name


@pytest.fixture(scope="module")
def units(symbols):
    return units_of(symbols)


def include_edges(units):
    return {(units[path], units[target]) for path in sources() for target in includes(path)
            if target in units}


def inline_edges(units):
    """A file that calls a static inline function of a header depends on that header, even
    when it includes it only through another."""
    inline = {fn: header for header in sources() if header.suffix == ".h"
              for fn in STATIC_INLINE.findall(code_of(header))}
    edges = set()
    for path in sources():
        code = code_of(path)
        for fn, header in inline.items():
            if header != path and re.search(rf"\b{fn}\s*\(", code):
                edges.add((units[path], units[header]))
    return edges


def call_edges(units, symbols):
    """Who calls whom, by the names one object needs and another defines. The interposed names
    are the C library's everywhere but inside libspecx.so, whose entry layer is on top."""
    interposed = interposed_names()
    owners = {}
    for source, (_, defined, _) in symbols.items():
        for name in defined - interposed:
            owners.setdefault(name, set()).add(source)
    edges = set()
    for source, (_, _, undefined) in symbols.items():
        for name in undefined:
            if len(owners.get(name, ())) == 1:
                edges.add((units[source], units[next(iter(owners[name]))]))
    return edges


def graph_of(edges):
    graph = {}
    for a, b in edges:
        if a != b:
            graph.setdefault(a, set()).add(b)
    return graph


def wrong_way(edges):
    """Edges from a layer to one it may not use: above it or beside it."""
    return sorted(f"{a} -> {b}" for a, b in edges
                  if layer_of(b) != layer_of(a) and layer_of(b) not in below(layer_of(a)))


def find_cycle(graph):
    """One cycle of the graph as a list of units, or None."""
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


def test_every_source_is_in_the_build(symbols):
    """What the build does not compile, the call graph cannot see."""
    unbuilt = [str(p.relative_to(SRC)) for p in sources() if p.suffix == ".c" and p not in symbols]
    assert not unbuilt, unbuilt


def test_includes_and_inline_calls_point_downward(units):
    edges = include_edges(units) | inline_edges(units)
    assert not wrong_way(edges), wrong_way(edges)


def test_calls_point_downward(units, symbols):
    edges = call_edges(units, symbols)
    assert not wrong_way(edges), wrong_way(edges)


def test_no_cycle_among_units(units, symbols):
    graph = graph_of(include_edges(units) | inline_edges(units) | call_edges(units, symbols))
    assert find_cycle(graph) is None, find_cycle(graph)


def test_a_header_fronting_two_files_is_one_unit(units):
    """The reason units exist: lazy_memory.h is the one header of two .c files."""
    refork = SRC / "run" / "runtime" / "refork"
    assert units[refork / "lazy_fill.c"] == units[refork / "lazy_regions.c"] == \
        units[refork / "lazy_memory.h"]


# --- the preload runtime ---

def runtime_symbols(symbols):
    """(module, defined, undefined) of every source compiled into libspecx.so or a library
    linked into it: the runtime's, the kernel layer's and common's."""
    return [(module_of(source), defined, undefined)
            for source, (target, defined, undefined) in symbols.items()
            if re.fullmatch(r"libspecx[-.\w]*\.(so|a)\.p", target) and
            module_of(source).startswith(("run/runtime/", "kernel/", "common/"))]


def test_only_the_entry_layer_reaches_interposed_names(symbols):
    interposed = interposed_names()
    below_entry = {module: sorted(undefined & interposed)
                   for module, _, undefined in runtime_symbols(symbols)
                   if not module.startswith("run/runtime/entry/")}
    assert not {m: names for m, names in below_entry.items() if names}


def test_libspecx_exports_only_what_the_entry_layer_defines(symbols):
    entry = set()
    for module, defined, _ in runtime_symbols(symbols):
        if module.startswith("run/runtime/entry/"):
            entry |= defined
    assert interposed_names() <= entry, interposed_names() - entry
