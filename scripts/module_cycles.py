"""Find circles of module imports inside each Rust crate of the workspace.

A module (one file, or an inline `mod` block folded into its file's module) imports
another when its code names it: `use crate::a::b`, an inline path `crate::a::f()`,
`super::x`, or a path that starts with one of its own child modules. A name that the crate
or any module re-exports (`pub use comm::Communicator`) counts as the module that defines
it, and the re-export itself is the module's face, not an import of its code. Declaring a
child (`mod x;`) is not an import, and neither is anything inside a
`#[cfg(test)]` item: a test may reach up and across. Comments, strings and character
literals are ignored.

`scripts/check-module-cycles` runs this over every crate; the unit tests are in
`scripts/test_module_cycles.py`. Standard library only.
"""

import os
import re

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip_comments_and_strings(text):
    """Return `text` with comments, string and char literals blanked (lines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 260]) and not re.match(r"[A-Za-z0-9_]", text[i - 1:i] or " "):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            end = n if end < 0 else end + 1 + len(hashes)
            out.append('""' + "\n" * text.count("\n", i, end))
            i = end
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j + 1
        elif c == "'":
            # A char literal ('a', '\n', '\u{..}'), not a lifetime ('a).
            m = re.match(r"'(\\.[^']*|[^\\'])'", text[i:i + 12])
            if m:
                out.append("' '")
                i += m.end()
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def block_end(text, start):
    """Return the index after the item starting at `start`: its `{...}` or up to `;`."""
    i, n = start, len(text)
    while i < n and text[i] not in "{;":
        i += 1
    if i >= n or text[i] == ";":
        return i + 1
    depth = 0
    while i < n:
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def strip_test_items(text):
    """Blank every item behind `#[cfg(test)]` (its attribute included)."""
    while True:
        m = re.search(r"#\[cfg\(test\)\]", text)
        if not m:
            return text
        end = block_end(text, m.end())
        text = text[:m.start()] + "\n" * text.count("\n", m.start(), end) + text[end:]


def expand_use_tree(tree):
    """Expand a `use` tree (`a::{b, c::{d as f, e}}`) into its paths, each a list of
    segments ending with the name it binds (`f` for `d as f`)."""
    tree = re.sub(r"\s+", "", re.sub(r"\s+as\s+", "@", tree))
    out = []

    def walk(prefix, t):
        i = t.find("{")
        if i < 0:
            for part in filter(None, t.split(",")):
                named, _, alias = part.partition("@")
                path = prefix + [s for s in named.split("::") if s]
                out.append((path, alias or (path[-1] if path else "")))
            return
        head = [s for s in t[:i].split("::") if s]
        depth, items, start = 0, [], i + 1
        for j in range(i, len(t)):
            if t[j] == "{":
                depth += 1
            elif t[j] == "}":
                depth -= 1
                if depth == 0:
                    items.append(t[start:j])
                    break
            elif t[j] == "," and depth == 1:
                items.append(t[start:j])
                start = j + 1
        for item in filter(None, items):
            walk(prefix + head, item)

    walk([], tree)
    return out


class Crate:
    """The modules of one crate root, with the files that hold them."""

    def __init__(self, root_file):
        self.root_file = root_file
        self.files = {}  # module path (tuple) -> source without comments, strings, tests
        self.children = {}  # module path -> set of child names
        self.reexports = {}  # (module path, name it re-exports) -> module path defining it
        self._load((), root_file, os.path.dirname(root_file))
        self._find_reexports()

    def _load(self, path, file, dir_for_children):
        with open(file, encoding="utf-8") as f:
            raw = f.read()
        text = strip_test_items(strip_comments_and_strings(raw))
        self.files[path] = text
        self.children[path] = set()
        for m in re.finditer(r"(?:pub(?:\([^)]*\))?\s+)?\bmod\s+(" + IDENT + r")\s*;", text):
            name = m.group(1)
            self.children[path].add(name)
            at = re.search(r'#\[path\s*=\s*"([^"]+)"\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+'
                           + name + r"\s*;", raw)
            if at:
                candidates = [os.path.join(os.path.dirname(file), at.group(1))]
            else:
                candidates = [os.path.join(dir_for_children, name + ".rs"),
                              os.path.join(dir_for_children, name, "mod.rs")]
            for c in candidates:
                if os.path.exists(c):
                    child_dir = os.path.join(dir_for_children, name)
                    self._load(path + (name,), c, child_dir)
                    break

    def _find_reexports(self):
        # Twice, so that a re-export of a re-export (a facade over a facade) resolves.
        for _ in range(2):
            for here, text in self.files.items():
                for m in re.finditer(r"pub(?:\([^)]*\))?\s+use\s+([^;]+);", text):
                    for segs, bound in expand_use_tree(m.group(1)):
                        module = self.resolve(here, segs[:-1] + ["?"])
                        module = self.reexports.get((module, segs[-1]) if segs else None, module)
                        if module is not None and module != here:
                            self.reexports[(here, bound)] = module

    def walk(self, base, segs):
        """Follow `segs` down from module `base`: through child modules, then through a name
        the module reached re-exports; return the module that defines what they name."""
        path = base
        for s in segs:
            if s in self.children.get(path, ()):
                path = path + (s,)
            elif (path, s) in self.reexports:
                return self.reexports[(path, s)]
            else:
                break
        return path

    def resolve(self, here, segs):
        """Resolve a path written in module `here` to the module it names, if any."""
        if not segs:
            return None
        if segs[0] == "crate":
            return self.walk((), segs[1:])
        if segs[0] in ("super", "self"):
            base = here
            while segs and segs[0] in ("super", "self"):
                if segs[0] == "super":
                    base = base[:-1]
                segs = segs[1:]
            return self.walk(base, segs)
        if segs[0] in self.children.get(here, ()):
            return self.walk(here, segs)
        return None

    def imports(self):
        """Return {module: set of modules it imports}, self-references left out."""
        return {here: set(found) for here, found in self.imports_why().items()}

    def imports_why(self):
        """Return {module: {module it imports: the paths in its code that name it}}."""
        edges = {}
        for here, text in self.files.items():
            found = {}

            def note(segs):
                target = self.resolve(here, segs)
                if target is not None and target != here and target in self.files:
                    found.setdefault(target, set()).add("::".join(segs))

            for m in re.finditer(r"(pub(?:\([^)]*\))?\s+)?\buse\s+([^;]+);", text):
                if m.group(1):
                    continue  # a re-export: the module's face, not what its code uses
                for segs, _ in expand_use_tree(m.group(2)):
                    note(segs)
            # The paths in code, outside the `use` statements read above.
            code = re.sub(r"(?:pub(?:\([^)]*\))?\s+)?\buse\s+[^;]+;", "", text)
            path_re = r"\b((?:crate|super|self)(?:::" + IDENT + r")+)"
            for m in re.finditer(path_re, code):
                note(m.group(1).split("::"))
            for child in self.children.get(here, ()):
                for m in re.finditer(r"(?<![:\w])(" + re.escape(child) + r"(?:::" + IDENT + r")+)", code):
                    note(m.group(1).split("::"))
            edges[here] = found
        return edges


def cycles(edges):
    """Return the strongly connected components of more than one module (Tarjan)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
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

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def name(path):
    return "::".join(path) or "crate"


def crate_roots(workspace):
    """Yield every crate root file (lib.rs, main.rs, src/bin/*.rs) under `workspace`."""
    skip = {"target", ".git", "node_modules"}
    for dirpath, dirnames, filenames in os.walk(workspace):
        dirnames[:] = sorted(d for d in dirnames if d not in skip and not d.startswith("."))
        if "Cargo.toml" in filenames:
            src = os.path.join(dirpath, "src")
            for root in ("lib.rs", "main.rs"):
                if os.path.exists(os.path.join(src, root)):
                    yield os.path.join(src, root)
            bins = os.path.join(src, "bin")
            if os.path.isdir(bins):
                for f in sorted(os.listdir(bins)):
                    if f.endswith(".rs"):
                        yield os.path.join(bins, f)
