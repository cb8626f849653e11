#!/usr/bin/env python3
"""Checks that the CMake and the Meson build define the same things.

    check_build_parity.py CMAKE_BUILD_DIR MESON_BUILD_DIR
        compare two configured build folders of this repository; exit 1 and
        list every difference, 0 when they agree
    check_build_parity.py --self-test
        run the comparison on two hand-made descriptions that differ in every
        way it must notice; exit 0 only when each difference is reported

What must agree: the set of libraries and programs (by the name of the file
each builds, and kind: static library, shared library, loadable module,
executable), the source files of
each (headers aside: CMake lists the ones a target names, Meson does not), and
the set of test names. CMake's side comes from its file API (a codemodel-v2
query is placed in the build folder and the folder configured again, which
re-runs nothing but the configure step), Meson's from `meson introspect`.

Both builds must be configured alike: a PyTorch integration built by one and
not the other shows up as a difference, as it should.

Pure python3 standard library.
"""

import glob
import json
import os
import re
import subprocess
import sys

CMAKE_KINDS = {
    "STATIC_LIBRARY": "static library",
    "SHARED_LIBRARY": "shared library",
    "MODULE_LIBRARY": "shared module",
    "EXECUTABLE": "executable",
}
HEADER_SUFFIXES = (".h", ".hh", ".hpp", ".hxx", ".inl", ".ipp")


def _artifact(path):
    """The file name a target builds, without a shared library's version suffix (libx.so.1.2.3: libx.so)."""
    name = os.path.basename(path)
    return re.sub(r"(\.so)(\.[0-9]+)+$", r"\1", name)


def _inside(path, folder):
    """Whether path lies in folder (both resolved)."""
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return path == folder or path.startswith(folder + os.sep)


def _source(root, path):
    """Repository-relative path of a source file, or None for generated and header files."""
    full = path if os.path.isabs(path) else os.path.join(root, path)
    rel = os.path.relpath(os.path.realpath(full), os.path.realpath(root))
    if rel.startswith("..") or rel.endswith(HEADER_SUFFIXES):
        return None
    return rel.replace(os.sep, "/")


def cmake_description(build, root):
    """{"targets": {file name: (kind, [sources])}, "tests": [names]} of a configured CMake folder."""
    query = os.path.join(build, ".cmake", "api", "v1", "query", "codemodel-v2")
    os.makedirs(os.path.dirname(query), exist_ok=True)
    if not os.path.exists(query):
        open(query, "w").close()
    subprocess.run(["cmake", build], check=True, stdout=subprocess.DEVNULL)
    reply = os.path.join(build, ".cmake", "api", "v1", "reply")
    index = max(glob.glob(os.path.join(reply, "codemodel-v2-*.json")), key=os.path.getmtime)
    with open(index, encoding="utf-8") as f:
        model = json.load(f)
    targets = {}
    for ref in model["configurations"][0]["targets"]:
        with open(os.path.join(reply, ref["jsonFile"]), encoding="utf-8") as f:
            t = json.load(f)
        kind = CMAKE_KINDS.get(t["type"])
        if kind is None:  # utility and interface targets build nothing of their own
            continue
        # A unity build's generated files (in the build folder) stand for the sources, also listed.
        sources = {
            _source(root, s["path"])
            for s in t.get("sources", [])
            if not s.get("isGenerated") and not _inside(os.path.join(root, s["path"]), build)
        }
        # The file built identifies a target: the two builds may name the same module differently.
        targets[_artifact(t.get("nameOnDisk", t["name"]))] = (kind, sorted(s for s in sources if s))
    listed = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1"], check=True,
                            capture_output=True, text=True).stdout
    tests = sorted(t["name"] for t in json.loads(listed)["tests"])
    return {"targets": targets, "tests": tests}


def meson_description(build, root):
    """The same description of a configured Meson folder."""
    def introspect(what):
        out = subprocess.run(["meson", "introspect", what, build], check=True, capture_output=True, text=True)
        return json.loads(out.stdout)

    targets = {}
    for t in introspect("--targets"):
        if t["type"] in ("custom", "run", "alias"):
            continue
        sources = set()
        for group in t["target_sources"]:
            for s in group.get("sources", []):
                sources.add(_source(root, s))
            # A unity target lists only its generated unity files: the sources are what they include.
            for g in group.get("generated_sources", []):
                if re.search(r"-unity[0-9]+\.(c|cpp)$", g) and os.path.exists(g):
                    with open(g, encoding="utf-8") as f:
                        for line in f:
                            m = re.match(r'\s*#\s*include\s*[<"]([^>"]+)[>"]', line)
                            if m:
                                sources.add(_source(root, os.path.join(os.path.dirname(g), m.group(1))))
        targets[_artifact(t["filename"][0])] = (t["type"], sorted(s for s in sources if s))
    tests = sorted(t["name"] for t in introspect("--tests"))
    return {"targets": targets, "tests": tests}


def differences(cmake, meson):
    """Sentences, one per difference (empty when the two agree)."""
    out = []
    ct, mt = cmake["targets"], meson["targets"]
    for name in sorted(set(ct) - set(mt)):
        out.append(f"{ct[name][0]} {name}: defined by CMake only")
    for name in sorted(set(mt) - set(ct)):
        out.append(f"{mt[name][0]} {name}: defined by Meson only")
    for name in sorted(set(ct) & set(mt)):
        (ckind, csrc), (mkind, msrc) = ct[name], mt[name]
        if ckind != mkind:
            out.append(f"{name}: a {ckind} in CMake, a {mkind} in Meson")
        for s in sorted(set(csrc) - set(msrc)):
            out.append(f"{name}: source {s} in CMake only")
        for s in sorted(set(msrc) - set(csrc)):
            out.append(f"{name}: source {s} in Meson only")
    for name in sorted(set(cmake["tests"]) - set(meson["tests"])):
        out.append(f"test {name}: registered by CMake only")
    for name in sorted(set(meson["tests"]) - set(cmake["tests"])):
        out.append(f"test {name}: registered by Meson only")
    return out


def self_test():
    cmake = {
        "targets": {
            "core": ("static library", ["core/a.cpp", "core/b.cpp"]),
            "tool": ("executable", ["tools/main.cpp"]),
            "plugin": ("shared module", ["p/p.cpp"]),
            "cmake_only": ("executable", ["x.cpp"]),
        },
        "tests": ["same", "cmake_test"],
    }
    meson = {
        "targets": {
            "core": ("static library", ["core/a.cpp", "core/c.cpp"]),
            "tool": ("executable", ["tools/main.cpp"]),
            "plugin": ("shared library", ["p/p.cpp"]),
            "meson_only": ("static library", ["y.cpp"]),
        },
        "tests": ["same", "meson_test"],
    }
    expected = [
        "executable cmake_only: defined by CMake only",
        "static library meson_only: defined by Meson only",
        "core: source core/b.cpp in CMake only",
        "core: source core/c.cpp in Meson only",
        "plugin: a shared module in CMake, a shared library in Meson",
        "test cmake_test: registered by CMake only",
        "test meson_test: registered by Meson only",
    ]
    got = differences(cmake, meson)
    ok = sorted(got) == sorted(expected) and differences(cmake, cmake) == []
    for line in got:
        print(line)
    print(f"self-test: {len(expected)} expected differences: {'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cmake = cmake_description(argv[1], root)
    meson = meson_description(argv[2], root)
    diffs = differences(cmake, meson)
    for line in diffs:
        print(line)
    if diffs:
        print(f"check_build_parity: {len(diffs)} difference(s) between {argv[1]} (CMake) and {argv[2]} (Meson)")
        return 1
    print(f"check_build_parity: CMake and Meson define the same {len(cmake['targets'])} libraries and programs "
          f"(and their sources) and the same {len(cmake['tests'])} tests")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
