#!/usr/bin/env python3
"""Lists the functions of our C++ sources longer than a limit, and fails
(exit 1) if one of them is not in the list of exceptions.

    scripts/check_function_length.py [--limit N] [--all] [PATH...]

PATHs default to the library and binary components and the fuzz targets
(what `make lint` checks; tests/ and bench/ are not checked). A function's length is
the number of lines from the line of its opening brace to the line of its
closing one, comments and blank lines included: what a reader scrolls
through. --limit N (default 100). --all: print every function over the
limit and exit 0 (a survey). Exceptions live in
scripts/function_length_exceptions.txt, one `path:function` per line with
the reason it stays long (a hot-path function kept whole on purpose).

How it finds functions, without a compiler: comments, string and character
literals and preprocessor lines are blanked out; a `{` opens a function
body when the text before it (since the last `;`, `{` or `}`) holds a
parameter list and is not a namespace, class, struct, union, enum, a
control statement or an initializer (`= {`, `return {`). Lambdas and
blocks inside a function count toward that function. Exit 0: nothing over
the limit outside the exceptions; 1: something is; 2: usage.
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), ".."))
DEFAULT_DIRS = ["base", "codec", "feed", "marketdata", "jsonl", "auth",
                "engine", "journal", "net", "client", "replication", "config",
                "state", "service", "cluster", "cli", "fuzz"]
EXCEPTIONS = os.path.join(ROOT, "scripts", "function_length_exceptions.txt")

CONTAINER = re.compile(
    r"\b(namespace|class|struct|union|enum)\b[^()]*$|extern\s+\"C\"\s*$")
CONTROL = re.compile(r"^\s*(if|for|while|switch|catch|else|do|try)\b")
NAME = re.compile(r"([~\w:<>]+(?:operator\s*[^\s(]+)?)\s*\(")


def blank(text):
    """The text with comments, literals and preprocessor lines replaced by
    spaces (newlines kept, so line numbers stay)."""
    out = []
    i, n = 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if at_line_start and c == "#":
            # A preprocessor line, with its continuations.
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        at_line_start = False
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                out.append(" ")
                i += 1
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
            continue
        m = re.match(r'(?:u8|u|U|L)?R"([^()\\ ]{0,16})\(', text[i:i + 24])
        if m:
            close = ")" + m.group(1) + '"'
            end = text.find(close, i + m.end())
            end = n if end < 0 else end + len(close)
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
            continue
        if c in "\"'":
            # A digit separator (1'000) is not a character literal.
            if c == "'" and i > 0 and text[i - 1].isalnum() and \
                    i + 1 < n and text[i + 1].isalnum():
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (min(j + 1, n) - i))
            i = j + 1
            continue
        if c == "\n":
            at_line_start = True
        out.append(c)
        i += 1
    return "".join(out)


def functions(text):
    """(name, first line, last line) of each outermost function body."""
    code = blank(text)
    found = []
    stack = []  # for each open brace: "container", "function" or "block"
    head_start = 0  # where the text before the next brace starts
    line = 1
    open_line = 0
    name = ""
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
        elif c == ";":
            head_start = i + 1
        elif c == "{":
            head = " ".join(code[head_start:i].split())
            inside_function = "function" in stack
            if inside_function:
                kind = "block"
            elif CONTAINER.search(head) or not head:
                kind = "container"
            elif CONTROL.match(head) or re.search(r"(=|\breturn)\s*$", head):
                kind = "block"
            elif "(" in head and ")" in head:
                kind = "function"
                # The declarator's name: the identifier before the first
                # parameter list.
                first = NAME.search(head)
                name = first.group(1) if first else head[:40]
                open_line = line
            else:
                kind = "block"
            stack.append(kind)
            head_start = i + 1
        elif c == "}":
            kind = stack.pop() if stack else "container"
            if kind == "function":
                found.append((name, open_line, line))
            head_start = i + 1
    return found


def sources(paths):
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard",
         "--", *[f"{p}/*.cc" if os.path.isdir(os.path.join(ROOT, p)) else p
                 for p in paths]],
        cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    return [f for f in files if f.endswith((".cc", ".h"))
            and os.path.exists(os.path.join(ROOT, f))]


def exceptions():
    allowed = {}
    if not os.path.exists(EXCEPTIONS):
        return allowed
    with open(EXCEPTIONS, encoding="utf-8") as f:
        for raw in f:
            entry = raw.split("#", 1)[0].strip()
            if entry:
                key, _, why = entry.partition(" ")
                allowed[key] = why.strip()
    return allowed


def main():
    parser = argparse.ArgumentParser(add_help=True)
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--all", action="store_true")
    parser.add_argument("paths", nargs="*")
    args = parser.parse_args()
    dirs = args.paths or [d for d in DEFAULT_DIRS
                          if os.path.isdir(os.path.join(ROOT, d))]
    headers = [f"{d}/*.h" for d in dirs if os.path.isdir(os.path.join(ROOT, d))]
    files = sources(dirs) + sources(headers) if headers else sources(dirs)
    allowed = exceptions()
    long_ones = []
    for path in sorted(set(files)):
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            text = f.read()
        for name, first, last in functions(text):
            length = last - first + 1
            if length > args.limit:
                long_ones.append((length, path, name, first))
    bad = 0
    for length, path, name, first in sorted(long_ones, reverse=True):
        short = name.split("::")[-1]
        ok = f"{path}:{name}" in allowed or f"{path}:{short}" in allowed
        bad += 0 if ok else 1
        verdict = "allowed" if ok else "too long"
        print(f"{path}:{first}: {name}: {length} lines ({verdict})")
    print(f"check_function_length: {len(long_ones)} function(s) over "
          f"{args.limit} lines, {bad} not in "
          f"{os.path.relpath(EXCEPTIONS, ROOT)}")
    if args.all:
        return 0
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
