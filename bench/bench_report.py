"""What the Python benchmarks' reports share: the commit they measured, and printing a report
while writing it as OUT.md beside its raw figures in OUT.json."""
import json
import os
import subprocess


def commit():
    """The short hash of the checkout holding bench/, or "?" outside a git checkout."""
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             cwd=os.path.dirname(os.path.abspath(__file__)))
    except OSError:
        return "?"
    return out.stdout.strip() or "?"


def publish(text, results, out):
    """Prints text; with out, writes it to out.md and results (JSON-able) to out.json."""
    print(text)
    if out:
        with open(out + ".md", "w") as f:
            f.write(text)
        with open(out + ".json", "w") as f:
            json.dump(results, f, indent=2)
