#!/usr/bin/env python3
"""Checks the include layering of DESIGN.md over a source tree.

    check_layering.py [ROOT]      check ROOT (default: this repository);
                                  exit 1 and list file:line [rule] on violations
    check_layering.py --self-test [FIXTURE [FILE...]]   (each FILE must be scanned)
                                  run on a fixture tree (default:
                                  tests/checks/fixtures/layering) whose lines that
                                  must be reported end in "expect: RULE"; exit 0
                                  only when exactly those lines are reported

Every #include "..." and #include <...> of every C/C++ file under the code
folders is resolved the way the compiler would (the including file's folder,
include/, the repository root, the part's own folder), else classified by a
path prefix such as "streams/" or "mtia/", then checked against the rules:

  public-header   include/mtia includes only <stddef.h>, <stdint.h> and
                  include/mtia headers
  third-party-in-public-header
                  no fmt, Boost, hwloc, numa, CLI11, gtest... in include/mtia
  upward          a part includes a part of a higher layer:
                  core <- platform/driver, platform/registry,
                  platform/topology <- streams <- allocator <- graph <-
                  runtime (device, capi, ...)
  same-layer      parts of one layer do not include each other (driver,
                  registry and topology include core only)
  sim-plugin      drivers/sim includes only itself, include/mtia,
                  platform/registry and, of platform/topology, the bounded
                  hwloc load (platform/topology/bounded_hwloc.hpp)
  sim-internal    only drivers/sim, tests and bench include drivers/sim; the
                  runtime reaches the sim through the driver ABI alone
                  (platform/driver/builtin_drivers.hpp declares the built-in
                  driver's entry point, runtime/ml asks the driver's 1.6
                  entries)
  public-api-only tools/ and integrations/ include only include/mtia and
                  their own files; tests/capi only include/mtia and tests/
  snapshot-format allocator/snapshot (the snapshot model and writers) includes
                  only itself; tools/ and integrations/ may include it too
                  (mtia-mem writes snapshots with the runtime's own writer)
  leaf            nothing includes tools/, integrations/ (except themselves),
                  tests/ or bench/ (except tests/ and bench/)

Pure python3 standard library.
"""

import os
import re
import sys

SOURCE_EXTENSIONS = {".h", ".hh", ".hpp", ".hxx", ".inl", ".ipp", ".c", ".cc", ".cpp", ".cxx"}
CODE_FOLDERS = ["include", "core", "platform", "drivers", "runtime", "streams", "allocator", "graph", "tools", "integrations", "bench", "tests"]
FIXTURES = "tests/checks/fixtures"  # deliberate violations, checked only by --self-test

# Folder -> part; the longest matching folder wins.
PARTS = {
    "include": "public",
    "core": "core",
    "platform/driver": "driver",
    "platform/registry": "registry",
    "platform/topology": "topology",
    "drivers/sim": "sim",
    "streams": "streams",
    "allocator": "allocator",
    "allocator/snapshot": "snapshot-format",
    "graph": "graph",
    "runtime": "runtime",
    "tools": "tools",
    "integrations": "integrations",
    "bench": "bench",
    "tests/capi": "tests-capi",
    "tests": "tests",
}
# Prefixes that name a part in an include that resolves to no file.
PREFIXES = {"mtia/": "include/mtia/"}
PREFIXES.update({folder + "/": folder + "/" for folder in PARTS if folder != "include"})

LAYER = {
    "core": 1,
    "driver": 2,
    "registry": 2,
    "topology": 2,
    "streams": 3,
    "snapshot-format": 1,
    "allocator": 4,
    "graph": 5,
    "runtime": 6,
}
PUBLIC_SYSTEM_HEADERS = {"stddef.h", "stdint.h"}
# What the sim may use of platform/topology: the one hwloc load that refuses hostile HWLOC_* input.
SIM_TOPOLOGY_HEADERS = {"platform/topology/bounded_hwloc.hpp"}
THIRD_PARTY = re.compile(
    r"^(fmt/|boost/|hwloc|numa|CLI/|gtest/|gmock/|benchmark/|simdjson|torch/|ATen/|c10/|pybind11/|Python\.h)"
)
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def part_of(rel):
    """The part a repository-relative path belongs to, or None."""
    best = None
    for folder in PARTS:
        if rel == folder or rel.startswith(folder + "/"):
            if best is None or len(folder) > len(best):
                best = folder
    return PARTS[best] if best else None


def folder_of_part(rel):
    best = ""
    for folder in PARTS:
        if rel.startswith(folder + "/") and len(folder) > len(best):
            best = folder
    return best


def include_lines(path):
    """(line number, delimiter, name) of each #include outside block comments."""
    with open(path, encoding="utf-8", errors="replace") as f:
        in_comment = False
        for number, line in enumerate(f, 1):
            code = ""
            rest = line
            while rest:
                if in_comment:
                    end = rest.find("*/")
                    if end < 0:
                        rest = ""
                    else:
                        rest = rest[end + 2 :]
                        in_comment = False
                else:
                    start = rest.find("/*")
                    if start < 0:
                        code += rest
                        rest = ""
                    else:
                        code += rest[:start] + " "
                        rest = rest[start + 2 :]
                        in_comment = True
            m = INCLUDE.match(code)
            if m:
                yield number, m.group(1), m.group(2).strip()


def resolve(root, rel_file, delim, name):
    """Repository-relative path of an included header of ours, or None."""
    bases = []
    if delim == '"':
        bases.append(os.path.dirname(rel_file))
    bases += ["include", ""]
    own = folder_of_part(rel_file)
    if own and delim == '"':
        bases.append(own)
    for base in bases:
        rel = os.path.normpath(os.path.join(base, name))
        if rel.startswith("..") or os.path.isabs(rel):
            continue
        if os.path.isfile(os.path.join(root, rel)):
            return rel.replace(os.sep, "/")
    normalized = os.path.normpath(name).replace(os.sep, "/")
    for prefix, folder in PREFIXES.items():
        if normalized.startswith(prefix):
            return folder + normalized[len(prefix) :]
    return None


def check_include(src_rel, src, delim, name, dst_rel):
    """None if allowed, else (rule, message)."""
    dst = part_of(dst_rel) if dst_rel else None
    shown = f"<{name}>" if delim == "<" else f'"{name}"'

    if src == "public":
        if dst == "public":
            return None
        if delim == "<" and name in PUBLIC_SYSTEM_HEADERS:
            return None
        if dst is None and THIRD_PARTY.match(name):
            return ("third-party-in-public-header", f"third-party header {shown} in a public header")
        return ("public-header", f"public headers include only <stddef.h>, <stdint.h> and include/mtia: {shown}")
    if dst is None or dst == src or dst == "public":
        return None
    if src == "snapshot-format":
        return ("snapshot-format", f"allocator/snapshot includes only itself (tools compile it): {shown} is {dst}")
    if dst == "snapshot-format" and src in ("tools", "integrations"):
        return None
    if dst in ("tests", "tests-capi", "bench"):
        if src in ("tests", "tests-capi", "bench"):
            return None
        return ("leaf", f"{src} includes {dst_rel} ({dst} is a leaf nothing else includes)")
    if src in ("tests", "bench"):
        return None
    if dst in ("tools", "integrations"):
        return ("leaf", f"{src} includes {dst_rel} ({dst} is a leaf nothing else includes)")
    if src in ("tools", "integrations", "tests-capi"):
        return ("public-api-only", f"{src} uses only the public API (include/mtia): {shown} is {dst} internals")
    if src == "sim":
        if dst == "registry" or dst_rel in SIM_TOPOLOGY_HEADERS:
            return None
        return ("sim-plugin", f"drivers/sim includes only include/mtia, platform/registry and platform/topology/bounded_hwloc.hpp: {shown} is {dst}")
    if dst == "sim":
        return ("sim-internal", f"{src} includes {dst_rel}: the sim driver is a plug-in behind include/mtia/mtia_driver.h")
    if src in LAYER and dst in LAYER:
        if LAYER[dst] > LAYER[src]:
            return ("upward", f"{src} (layer {LAYER[src]}) includes {dst} (layer {LAYER[dst]}): {shown}")
        if LAYER[dst] == LAYER[src]:
            return ("same-layer", f"{src} and {dst} are one layer and do not include each other: {shown}")
    return None


def source_files(root):
    for top in CODE_FOLDERS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
            dirnames[:] = sorted(
                d
                for d in dirnames
                if not d.startswith((".", "build", "__pycache__")) and f"{rel_dir}/{d}" != FIXTURES
            )
            for filename in sorted(filenames):
                if os.path.splitext(filename)[1] in SOURCE_EXTENSIONS:
                    yield f"{rel_dir}/{filename}"


def check_tree(root):
    """(number of files, [(file, line, rule, message)])."""
    violations = []
    count = 0
    for rel in source_files(root):
        count += 1
        src = part_of(rel)
        for number, delim, name in include_lines(os.path.join(root, rel)):
            problem = check_include(rel, src, delim, name, resolve(root, rel, delim, name))
            if problem:
                violations.append((rel, number) + problem)
    return count, violations


def run(root):
    count, violations = check_tree(root)
    for rel, number, rule, message in violations:
        print(f"{rel}:{number}: [{rule}] {message}")
    if violations:
        print(f"check_layering: {len(violations)} violation(s) in {count} files under {root}")
        return 1
    if count == 0:
        print(f"check_layering: no source files under {root}")
        return 1
    print(f"check_layering: {count} files under {root} follow the layering")
    return 0


EXPECT = re.compile(r"expect:\s*([a-z-]+)")


def self_test(fixture, declared=()):
    """declared: fixture files the build lists as the test's inputs; each must
    be one the scan visits, so a folder the walker stopped visiting shows."""
    scanned = set(source_files(fixture))
    ok = True
    for path in declared:
        rel = os.path.relpath(os.path.abspath(path), fixture).replace(os.sep, "/")
        if rel not in scanned:
            print(f"NOT SCANNED:  {rel} (listed as a fixture input, but the scan does not visit it)")
            ok = False
    expected = set()
    for rel in sorted(scanned):
        with open(os.path.join(fixture, rel), encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                m = EXPECT.search(line)
                if m:
                    expected.add((rel, number, m.group(1)))
    status = run(fixture)
    _, violations = check_tree(fixture)
    reported = {(rel, number, rule) for rel, number, rule, _ in violations}
    for rel, number, rule in sorted(expected - reported):
        print(f"NOT DETECTED: {rel}:{number}: [{rule}]")
        ok = False
    for rel, number, rule in sorted(reported - expected):
        print(f"FALSE ALARM:  {rel}:{number}: [{rule}]")
        ok = False
    rules = {rule for _, _, rule in expected}
    if len(expected) < 5 or status != 1:
        print("self-test: the fixture must produce violations and exit status 1")
        ok = False
    print(f"self-test: {len(expected)} expected violations of {len(rules)} rules: {'ok' if ok else 'FAILED'}")
    return 0 if ok else 1


def main(argv):
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if argv[:1] == ["--self-test"]:
        fixture = argv[1] if len(argv) > 1 else os.path.join(repo, FIXTURES, "layering")
        return self_test(os.path.abspath(fixture), argv[2:])
    if len(argv) > 1 or (argv and argv[0].startswith("-")):
        print(__doc__)
        return 2
    return run(os.path.abspath(argv[0]) if argv else repo)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
