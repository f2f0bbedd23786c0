#!/usr/bin/env python3
"""Every file, folder, symbol and test that docs/architecture.md names exists in the tree (issue 23:
the page says where each table is described and where the code is, so a rename must not leave it
pointing at nothing).

  architecture_names_test.py REPO [DOC]

What it checks, from the page's `code spans`, links and the data-path picture:
  - a path (ends in / or in .h .cpp .sql .py .thrift .md): a file or folder of the repository
    (by its whole path or as the end of one), or a file schema/ generates (CMakeLists.txt);
  - a C++ name (Name::member, CamelCase, name() or snake_case_name): the identifiers occur in the
    sources (schema/, collector/, analyzer/, sharer/, daemon/, cli/, gui/, common/);
  - a test, Suite.Name or part.Suite.Name: a TEST*(Suite, Name ...) in tests/; a ctest name
    (schema.docs_current): an add_test(NAME ...) in a CMakeLists.txt.
Prints each name that is not found and exits 1 if any.
"""
import pathlib
import re
import sys

CODE_DIRS = ["schema", "collector", "analyzer", "sharer", "daemon", "cli", "gui", "common", "timeline"]
SOURCE = (".h", ".cpp", ".cc", ".py", ".thrift", ".sql", ".txt", ".cmake")
PATH_ENDS = (".h", ".cpp", ".sql", ".py", ".thrift", ".md")
# Words of the prose that are not names of the code.
NOT_NAMES = {"stored", "open", "report", "analyze", "fleet", "store", "python3", "captureId", "main"}


def files(repo, dirs=None):
    roots = [repo / d for d in dirs] if dirs else [repo]
    for root in roots:
        for p in root.rglob("*"):
            if p.is_file() and "build" not in p.relative_to(repo).parts[:1] and ".git" not in p.parts:
                yield p


def spans(doc):
    """The names the page uses: code spans, link targets and the words of its pictures."""
    names = set(re.findall(r"`([^`\n]+)`", doc))
    names |= {m for m in re.findall(r"\]\(([^)]+)\)", doc) if not m.startswith("http")}
    for picture in re.findall(r"```\n(.*?)```", doc, re.S):
        names |= set(re.findall(r"[A-Za-z_][\w:<>]*(?:::[\w<>]+)+(?:\(\))?|\b[A-Z][a-z]+[A-Z]\w*\b|\b\w+\.(?:h|cpp|sql)\b", picture))
    return names


def main():
    repo = pathlib.Path(sys.argv[1]).resolve()
    doc_path = pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else repo / "docs" / "architecture.md"
    doc = doc_path.read_text()
    all_files = [p.relative_to(repo).as_posix() for p in files(repo)]
    folders = {str(pathlib.PurePosixPath(f).parent) + "/" for f in all_files}
    folders |= {"/".join(f.split("/")[:i]) + "/" for f in all_files for i in range(1, f.count("/") + 1)}
    # What the build generates: gen_schema.py's outputs, Thrift's code from the IDL.
    generated = "\n".join((repo / "schema" / f).read_text() for f in ("CMakeLists.txt", "thrift/CMakeLists.txt"))
    sources = "\n".join(p.read_text(errors="replace") for p in files(repo, CODE_DIRS)
                        if p.suffix in SOURCE or p.name == "CMakeLists.txt")
    tests = "\n".join(p.read_text(errors="replace") for p in files(repo, ["tests"])
                      if p.suffix in (".cpp", ".h"))
    cmake = "\n".join(p.read_text(errors="replace") for p in files(repo) if p.name == "CMakeLists.txt")

    missing, checked = [], 0
    for name in sorted(spans(doc)):
        name = name.strip()
        if not name or " " in name or "<preset>" in name or "vN" in name or "*" in name:
            continue  # a command line, a pattern, a placeholder
        if name in NOT_NAMES or (name.startswith(".") and not name.startswith("../")) or "=" in name or "(" in name[:-2]:
            continue  # prose, an option (since=, nsys=True), a call with arguments (C(...))
        path = name[3:] if name.startswith("../") else name
        if path.endswith("/") or path.endswith(PATH_ENDS):
            checked += 1
            found = (path in all_files or path in folders or any(f.endswith("/" + path) for f in all_files)
                     or any(d.endswith("/" + path) for d in folders) or path in generated)
            if not found:
                missing.append(f"file or folder {name}")
            continue
        suite_test = re.fullmatch(r"(?:\w+\.)?([A-Z]\w*)\.([A-Z]\w*)", name)
        if suite_test:
            checked += 1
            if not re.search(rf"TEST\w*\(\s*{suite_test.group(1)}\s*,\s*{suite_test.group(2)}\b", tests):
                missing.append(f"test {name}")
            continue
        if re.fullmatch(r"[a-z]+\.[a-z_]+", name):
            checked += 1
            if not re.search(rf"add_test\(NAME {re.escape(name)}\b", cmake):
                missing.append(f"ctest {name}")
            continue
        words = re.findall(r"[A-Za-z_]\w*", re.sub(r"<[^>]*>", "", name))
        if not words:
            continue
        checked += 1
        for word in words:
            if not re.search(rf"\b{re.escape(word)}\b", sources):
                missing.append(f"name {word} (in {name})")
                break
    for m in missing:
        print(f"{doc_path.name}: no {m} in the tree")
    print(f"{doc_path.name}: {checked} names checked, {len(missing)} not found")
    return 1 if missing or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
