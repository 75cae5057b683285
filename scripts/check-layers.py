#!/usr/bin/env python3
"""Checks the layering of jadpo-core, jadpo-engine and jadpo-store-sql (run by `make lint`),
and that no HTTP edge can reach an operator verb.

Each crate's top-level modules (a file or folder under src/) may reference, through `crate::`,
only the modules its rule allows, and no two modules of a crate may reference each other in a
circle. References are read from `crate::name` paths and `use crate::{a, b}` groups anywhere in
a module's files, doc comments included (a doc link is a dependency too); test files (`tests.rs`,
`tests/`) and inline `#[cfg(test)] mod tests` blocks at the end of a file are left out.

No module file of any crate, at any nesting level, may reference another in a circle either:
`crate::a::b` and `super::x` paths are resolved to module files (a module's references to its
own ancestors and descendants, such as declaring and re-exporting children, do not count).

usage: check-layers.py [REPO_ROOT]      exits 1 and names each broken rule
       check-layers.py --self-test      shows the nested check finding a circle, then none
"""
import os
import re
import sys

BOTTOM = ["error", "sql", "clock", "id"]

# Which modules each module of a crate may reference. A module missing here fails the check, so a
# new module gets a rule of its own.
RULES = {
    "shared/core/src": {
        "error": [],
        "sql": ["error"],
        "clock": [],
        "id": ["clock"],
        "transaction": ["error", "sql"],
        "model": BOTTOM,
        "ports": BOTTOM + ["model", "transaction"],
        "store": ["ports", "transaction"],
    },
    # The engine's use cases may use each other as long as no two form a circle.
    "shared/engine/src": None,
    # The shared store roles: the statement contract at the bottom (over the compile-time
    # rewrite of named placeholders), then the tables of slots, the dialect that gathers an
    # adapter's tables, the store that holds one (and its batches of "sent" marks), the rows
    # read through typed column structs, the roles over it.
    "shared/store-sql/src": {
        "named": [],
        "statement": ["named"],
        "tables": ["statement"],
        "dialect": ["statement", "tables"],
        "marks": [],
        "store": ["dialect", "marks"],
        "columns": [],
        "rows": ["columns"],
        "roles": ["columns", "dialect", "rows", "statement", "store", "tables"],
    },
}


def modules(src):
    return sorted(
        os.path.splitext(n)[0]
        for n in os.listdir(src)
        if (n.endswith(".rs") and n not in ("lib.rs", "main.rs"))
        or os.path.isdir(os.path.join(src, n))
    )


def references(root, src, mods):
    """{module: {referenced module: first file and line that references it}}."""
    refs = {m: {} for m in mods}
    for folder, _, files in os.walk(src):
        if "tests" in os.path.relpath(folder, src).split(os.sep):
            continue
        for f in sorted(files):
            if not f.endswith(".rs") or f == "tests.rs":
                continue
            path = os.path.join(folder, f)
            top = os.path.splitext(os.path.relpath(path, src).split(os.sep)[0])[0]
            if top not in refs:
                continue
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            text = re.sub(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{.*", "", text, flags=re.S)
            found = [(m.group(1), m.start()) for m in re.finditer(r"\bcrate::(\w+)", text)]
            for group in re.finditer(r"\buse\s+crate::\{([^;]*)\}", text, flags=re.S):
                for name in re.finditer(r"(?:^|[,{\s])(\w+)(?=\s*(?:::|,|\}|$))", group.group(1)):
                    found.append((name.group(1), group.start()))
            for name, offset in found:
                if name in mods and name != top and name not in refs[top]:
                    line = text.count("\n", 0, offset) + 1
                    refs[top][name] = f"{os.path.relpath(path, root)}:{line}"
    return refs


def circles(refs):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in refs[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(refs):
        if v not in index:
            visit(v)
    return out


def crate_sources(root):
    """Every crate's src folder under `root` (build output and hidden folders left out)."""
    found = []
    for folder, subs, files in os.walk(root):
        parts = os.path.relpath(folder, root).split(os.sep)
        if "target" in parts or any(p.startswith(".") and p != "." for p in parts):
            subs[:] = []
            continue
        if os.path.basename(folder) == "src" and ("lib.rs" in files or "main.rs" in files):
            found.append(folder)
    return sorted(found)


def module_path(src, path):
    """The module a file is, as a tuple of names (`()` the crate root)."""
    rel = os.path.relpath(path, src)[:-3].split(os.sep)
    if rel[-1] in ("lib", "main", "mod"):
        rel = rel[:-1]
    return tuple(rel)


def file_references(src, files):
    """{module file: {module files it names through `crate::` or `super::` paths}}, a module's
    references to its own ancestors and descendants left out (declaring and re-exporting
    children is no circle)."""
    mods = set(files)

    def resolve(parts):
        for n in range(len(parts), 0, -1):
            if tuple(parts[:n]) in mods:
                return tuple(parts[:n])
        return None

    edges = {m: set() for m in mods}
    for m, path in files.items():
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        text = re.sub(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{.*", "", text, flags=re.S)
        text = re.sub(r"//[^\n]*", "", text)
        paths = re.findall(r"\b((?:crate|super)(?:::\w+)+)", text)
        for head, group in re.findall(r"\buse\s+((?:crate|super)(?:::\w+)*)::\{([^;]*)\}", text, flags=re.S):
            paths += [head + "::" + item for item in re.findall(r"(\w+(?:::\w+)*)", group)]
        is_folder_root = os.path.basename(path) in ("mod.rs", "lib.rs", "main.rs")
        for named in paths:
            parts = named.split("::")
            if parts[0] == "crate":
                parts = parts[1:]
            else:
                base = list(m if is_folder_root else m[:-1])
                parts = parts[1:]
                while parts and parts[0] == "super":
                    parts, base = parts[1:], base[:-1]
                parts = base + parts
            target = resolve(parts)
            if target is None or target[: len(m)] == m or m[: len(target)] == target:
                continue
            edges[m].add(target)
    return edges


def nested_circles(root):
    """Circles among the module files of every crate, at every nesting level."""
    problems = []
    for src in crate_sources(root):
        files = {}
        for folder, _, names in os.walk(src):
            if "tests" in os.path.relpath(folder, src).split(os.sep):
                continue
            for f in names:
                if f.endswith(".rs") and f != "tests.rs":
                    path = os.path.join(folder, f)
                    files[module_path(src, path)] = path
        for group in circles(file_references(src, files)):
            names = ", ".join("::".join(m) or "(crate root)" for m in group)
            problems.append(f"{os.path.relpath(src, root)}: module files {names} reference each other in a circle")
    return problems


def self_test():
    """The nested check finds a circle two levels down, and none once it is broken."""
    import tempfile
    with tempfile.TemporaryDirectory() as root:
        src = os.path.join(root, "demo", "src")
        os.makedirs(os.path.join(src, "a"))
        files = {
            "lib.rs": "pub mod a;\n",
            "a/mod.rs": "pub mod b;\npub mod c;\n",
            "a/b.rs": "use super::c::C;\npub struct B;\n",
            "a/c.rs": "use crate::a::b::B;\npub struct C;\n",
        }
        for name, text in files.items():
            with open(os.path.join(src, name), "w") as fh:
                fh.write(text)
        found = nested_circles(root)
        assert len(found) == 1 and "a::b, a::c" in found[0], found
        with open(os.path.join(src, "a/c.rs"), "w") as fh:
            fh.write("pub struct C;\n")
        assert nested_circles(root) == [], "a broken circle is still reported"
    print("check-layers self-test: ok")


# Operators act through `jadpo` with a database role, never over HTTP. Every operator verb takes
# an `Operator` (jadpo_engine::operate), which only `Operator::new` makes: code that serves HTTP
# never names it, so no route can call a verb. jadpo-local's main.rs is left out: it issues the
# local key as an operator at start, before it serves anything.
HTTP_EDGES = ["shared/http/src", "functions/commit/src", "functions/local/src"]
HTTP_EDGE_EXEMPT = ["functions/local/src/main.rs"]


def operator_over_http(root):
    problems = []
    for edge in HTTP_EDGES:
        for folder, _, files in os.walk(os.path.join(root, edge)):
            for f in sorted(files):
                path = os.path.join(folder, f)
                rel = os.path.relpath(path, root)
                if not f.endswith(".rs") or rel in HTTP_EDGE_EXEMPT:
                    continue
                with open(path, encoding="utf-8", errors="replace") as fh:
                    for n, line in enumerate(fh, 1):
                        if re.search(r"\bOperator\b|\boperate::", line.split("//")[0]):
                            problems.append(f"{rel}:{n}: an HTTP edge names an operator verb's Operator")
    return problems


def check(root):
    problems = operator_over_http(root) + nested_circles(root)
    for crate, rules in RULES.items():
        src = os.path.join(root, crate)
        mods = modules(src)
        refs = references(root, src, mods)
        for group in circles(refs):
            problems.append(f"{crate}: modules {', '.join(group)} reference each other in a circle")
        if rules is None:
            continue
        for m in mods:
            if m not in rules:
                problems.append(f"{crate}: module {m} has no layering rule in scripts/check-layers.py")
                continue
            for target, where in sorted(refs[m].items()):
                if target not in rules[m]:
                    problems.append(f"{crate}: {m} may not reference {target} ({where})")
    return problems


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return 0
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    problems = check(os.path.abspath(root))
    for p in problems:
        print(p)
    if problems:
        print(f"layering: {len(problems)} problem(s)")
        return 1
    print("layering: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
