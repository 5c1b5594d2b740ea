"""python3 -m modelbench: the modelbench CLI with the PyTorch conversions.

Every command of the C tool (bench, list, profile, history, cache, ...) runs in
this process with the "pytorch" host runtime installed, so EAGER, JIT_* and the
other PyTorch conversions are available to a model manifest.
"""

import os
import sys

from . import _lib, host


def task_environment() -> None:
    """What the tasks of a bench sent to an executor inherit: they start this
    front (`python3 -m modelbench`, this interpreter), not the bare CLI, so
    that PyTorch conversions are there; this package is on their
    PYTHONPATH."""
    os.environ.setdefault("MODELBENCH_TASK_COMMAND", f"{sys.executable} -m modelbench")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.environ.get("PYTHONPATH", "")
    if root not in path.split(os.pathsep):
        os.environ["PYTHONPATH"] = root + (os.pathsep + path if path else "")


def main() -> int:
    """Installs the host runtime and runs the CLI; returns its exit status.
    `script` is the Python front's own command (modelbench.script)."""
    if sys.argv[1:2] == ["script"]:
        from . import script

        return script.main(sys.argv[2:])
    task_environment()
    host.install()
    host.preload(sys.argv[1:2])
    return _lib.cli_main(["modelbench"] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
