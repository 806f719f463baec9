"""Where the reference implementations (the test oracles) are, for every script and test.

The TRM and ProtoNet references are third-party code, not mlhost's: they are not in the
checkout. They are read, unmodified, from $MLH_REFERENCE_DIR, which holds `trm/` and
`protonet/`; unset or empty, from `shared/reference` beside the checkout
(<checkout>/../shared/reference), where CI puts them. Without them, whatever needs them skips
(exit 77, the tests' "skipped"), naming the variable, the folder looked at and the upstream
commit to fetch. This file is the only place that looks: the bench shell scripts call it too.

    import mlh_references; mlh_references.use("trm")   # then: from models.losses import ...
    python3 bench/mlh_references.py trm                # prints the folder, or why not (exit 77)
"""
import os
import sys

VARIABLE = "MLH_REFERENCE_DIR"
# The checkout's root. realpath: the docs test reaches bench/ through a link in a scratch folder.
CHECKOUT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
DEFAULT = os.path.join(os.path.dirname(CHECKOUT), "shared", "reference")
UPSTREAM = {  # what to fetch where the folder is absent (its README.md lists the files)
    "trm": "github.com/SamsungSAILMontreal/TinyRecursiveModels at commit e7b68717f0a6c4cbb4ce6fbef787b14f42083bd9",
    "protonet": "github.com/jakesnell/prototypical-networks at commit c9bb4d258267c11cb6e23f0a19242d24ca98ad8a",
}


def reference_dir():
    """The folder holding trm/ and protonet/: $MLH_REFERENCE_DIR, else ../shared/reference."""
    return os.environ.get(VARIABLE) or DEFAULT


def find(name):
    """The folder of reference `name` ("trm" or "protonet"), or None where it is absent."""
    path = os.path.join(reference_dir(), name)
    return path if os.path.isdir(path) else None


def why_absent(name):
    """Why find(name) is None, naming the variable, the folder looked at and the upstream."""
    setting = f"{VARIABLE}={os.environ[VARIABLE]}" if os.environ.get(VARIABLE) else f"{VARIABLE} unset: default {DEFAULT}"
    return (f"no {name} reference at {os.path.join(reference_dir(), name)} ({setting}); point {VARIABLE} "
            f"at a folder with {name}/ from {UPSTREAM[name]}")


def use(name, program=None):
    """Puts reference `name` first on sys.path, as upstream runs it, and returns its folder;
    exits 77 (skipped), saying why, where it is absent."""
    path = find(name)
    if path is None:
        script = os.path.basename(sys.argv[0])
        program = program or (script if script not in ("", "-c") else "python -c")  # "-c": a snippet
        print(f"{program}: SKIPPED: {why_absent(name)}", flush=True)
        sys.exit(77)
    sys.path.insert(0, path)
    return path


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in UPSTREAM:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    found = find(sys.argv[1])
    print(found or why_absent(sys.argv[1]))
    sys.exit(0 if found else 77)
