"""Tests of scripts/module_cycles.py, the finder behind scripts/check-module-cycles: each
plants a small crate in a temporary folder. Standard library only; run by ./scripts/test
(`python3 -m unittest discover -s scripts -p 'test_*.py'`)."""

import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import module_cycles  # noqa: E402


def plant(files):
    """Write `files` ({path under src/: text}) as a crate; return its folder."""
    d = tempfile.mkdtemp()
    with open(os.path.join(d, "Cargo.toml"), "w") as f:
        f.write('[package]\nname = "planted"\n')
    for path, text in files.items():
        full = os.path.join(d, "src", path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(textwrap.dedent(text))
    return d


def found(files):
    d = plant(files)
    crate = module_cycles.Crate(os.path.join(d, "src", "lib.rs"))
    return [[module_cycles.name(m) for m in c] for c in module_cycles.cycles(crate.imports())]


LIB = "mod a;\nmod b;\nmod c;\npub use a::Alpha;\n"


class Cycles(unittest.TestCase):
    def test_a_planted_circle_is_found(self):
        self.assertEqual(found({
            "lib.rs": LIB,
            "a.rs": "use crate::b::Beta;\npub struct Alpha;\n",
            "b.rs": "pub struct Beta;\nfn f() { super::c::gamma(); }\n",
            "c.rs": "use crate::Alpha; // through the root's re-export\npub fn gamma() {}\n",
        }), [["a", "b", "c"]])

    def test_a_layered_crate_has_none(self):
        self.assertEqual(found({
            "lib.rs": LIB,
            "a.rs": "use crate::b::Beta;\npub struct Alpha;\n",
            "b.rs": "use crate::c::gamma;\npub struct Beta;\n",
            "c.rs": "pub fn gamma() {}\n",
        }), [])

    def test_grouped_and_renamed_imports_count(self):
        self.assertEqual(found({
            "lib.rs": LIB,
            "a.rs": "use crate::{b::{Beta as B}, c};\npub struct Alpha;\n",
            "b.rs": "pub struct Beta;\n",
            "c.rs": "use crate::a::Alpha;\n",
        }), [["a", "c"]])

    def test_comments_strings_and_tests_do_not_count(self):
        self.assertEqual(found({
            "lib.rs": LIB,
            "a.rs": "use crate::b::Beta;\npub struct Alpha;\n",
            "b.rs": """\
                //! Called by [`crate::a`]; see "crate::a::Alpha".
                /* crate::a::Alpha */
                pub struct Beta;
                const S: &str = "crate::a::Alpha";
                #[cfg(test)]
                mod tests {
                    use crate::a::Alpha;
                }
                """,
            "c.rs": "",
        }), [])

    def test_a_parent_and_its_child_in_a_folder(self):
        self.assertEqual(found({
            "lib.rs": "mod f;\n",
            "f/mod.rs": "mod plan;\nfn g() { plan::decide(); }\npub(crate) struct State;\n",
            "f/plan.rs": "use super::State;\npub fn decide() {}\n",
        }), [["f", "f::plan"]])

    def test_a_facade_that_only_re_exports_is_not_a_circle(self):
        self.assertEqual(found({
            "lib.rs": "mod f;\n",
            "f/mod.rs": "mod x;\nmod y;\npub use x::X;\npub use y::Y;\n",
            "f/x.rs": "pub struct X;\n",
            "f/y.rs": "use super::X;\npub struct Y;\n",
        }), [])

    def test_a_facade_that_re_exports_its_child_and_lends_it_a_type_is_not_a_circle(self):
        self.assertEqual(found({
            "lib.rs": "mod f;\n",
            "f/mod.rs": "mod x;\npub use x::X;\npub struct Shared;\n",
            "f/x.rs": "use super::Shared;\npub struct X(Shared);\n",
        }), [])

    def test_the_command_fails_on_a_circle_and_names_it(self):
        d = plant({
            "lib.rs": LIB,
            "a.rs": "use crate::b::Beta;\npub struct Alpha;\n",
            "b.rs": "use crate::a::Alpha;\npub struct Beta;\n",
            "c.rs": "",
        })
        run = subprocess.run([sys.executable, os.path.join(HERE, "check-module-cycles"), d],
                             capture_output=True, text=True)
        self.assertEqual(run.returncode, 1, run.stdout)
        self.assertIn("circle: a, b", run.stdout)
        os.remove(os.path.join(d, "src", "b.rs"))
        with open(os.path.join(d, "src", "b.rs"), "w") as f:
            f.write("pub struct Beta;\n")
        run = subprocess.run([sys.executable, os.path.join(HERE, "check-module-cycles"), d],
                             capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stdout)

    def test_verbose_names_the_paths_that_make_each_edge_of_a_circle(self):
        d = plant({
            "lib.rs": LIB,
            "a.rs": "use crate::b::Beta;\npub struct Alpha;\n",
            "b.rs": "pub struct Beta;\nfn f() { let _ = crate::a::Alpha; }\n",
            "c.rs": "",
        })
        run = subprocess.run([sys.executable, os.path.join(HERE, "check-module-cycles"), "-v", d],
                             capture_output=True, text=True)
        self.assertEqual(run.returncode, 1, run.stdout)
        self.assertIn("    a -> b: crate::b::Beta\n", run.stdout)
        self.assertIn("    b -> a: crate::a::Alpha\n", run.stdout)


if __name__ == "__main__":
    unittest.main()
