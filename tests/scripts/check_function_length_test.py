#!/usr/bin/env python3
"""scripts/check_function_length.py's function finder on made-up sources:
function bodies are measured from brace to brace; namespaces, classes,
initializers and control blocks are not functions; lambdas and blocks
count toward the function around them; comments and literals with braces
in them change nothing."""
import importlib.util
import os
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "check_function_length",
    os.path.join(HERE, "..", "..", "scripts", "check_function_length.py"))
tool = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tool)


def body(lines):
    return "\n".join(["  x += 1;"] * lines)


class FunctionsTest(unittest.TestCase):
    def test_a_function_is_measured_from_brace_to_brace(self):
        src = "int F(int x) {\n" + body(3) + "\n}\n"
        self.assertEqual(tool.functions(src), [("F", 1, 5)])

    def test_namespaces_classes_and_members(self):
        src = ("namespace a::b {\nclass C {\n public:\n"
               "  int G() const { return 1; }\n};\n"
               "int C::H(int y) {\n" + body(2) + "\n}\n}  // namespace\n")
        self.assertEqual(tool.functions(src),
                         [("G", 4, 4), ("C::H", 6, 9)])

    def test_lambdas_blocks_and_initializers_belong_to_the_function(self):
        src = ("void F() {\n  auto l = [&](int q) {\n    if (q) {\n"
               "    }\n  };\n  int a[] = {1, 2};\n}\n"
               "const int kTable[] = {\n  1,\n};\n")
        self.assertEqual(tool.functions(src), [("F", 1, 7)])

    def test_braces_in_comments_strings_and_preprocessor_lines(self):
        src = ('#define M(x) { x }\n// } {\nvoid F() {\n'
               '  const char* s = "}{";\n  char c = \'{\';\n'
               '  /* } */ auto r = R"({)";\n  int n = 1\'000;\n}\n')
        self.assertEqual(tool.functions(src), [("F", 3, 8)])

    def test_control_statements_at_namespace_level_do_not_confuse(self):
        src = ("struct S {\n  int v = 0;\n};\n"
               "template <typename T>\nT Max(T a, T b) {\n  if (a > b) {\n"
               "    return a;\n  }\n  return b;\n}\n")
        self.assertEqual(tool.functions(src), [("Max", 5, 10)])


if __name__ == "__main__":
    unittest.main()
