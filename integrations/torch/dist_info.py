"""Writes the dist-info of an installed torch_mtia (METADATA, entry_points.txt, RECORD) for the
CMake and Meson install steps, from pyproject.toml's [project] table, so that an install prefix's
site-packages gives importlib.metadata (and PyTorch's backend autoload) what a pip-installed wheel
gives.

Usage: dist_info.py OUT_DIR VERSION FILE...   FILE: the package's files relative to site-packages
(listed in RECORD, without hashes, so that `pip uninstall` can remove them)."""
import os
import sys
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))


def main(out_dir, version, files):
    with open(os.path.join(HERE, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    name = project["name"]
    os.makedirs(out_dir, exist_ok=True)
    metadata = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}",
                f"Summary: {project['description']}", f"Requires-Python: {project['requires-python']}"]
    metadata += [f"Requires-Dist: {dep}" for dep in project.get("dependencies", [])]
    entry_points = []
    for group, points in project.get("entry-points", {}).items():
        entry_points.append(f"[{group}]")
        entry_points += [f"{key} = {value}" for key, value in points.items()]
        entry_points.append("")
    dist_info = f"{name}-{version}.dist-info"
    record = list(files) + [f"{dist_info}/{n}" for n in ("METADATA", "entry_points.txt", "RECORD")]
    contents = {"METADATA": metadata, "entry_points.txt": entry_points,
                "RECORD": [f"{path},," for path in record]}
    for file_name, lines in contents.items():
        with open(os.path.join(out_dir, file_name), "w", encoding="utf-8") as f:
            f.write("\n".join(lines).rstrip("\n") + "\n")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
