"""python3 -m modelbench: the modelbench CLI with the PyTorch conversions.

Every command of the C tool (bench, list, profile, history, cache, ...) runs in
this process with the "pytorch" host runtime installed, so EAGER, JIT_* and the
other PyTorch conversions are available to a model manifest.
"""

import sys

from . import _lib, host


def main() -> int:
    """Installs the host runtime and runs the CLI; returns its exit status.
    `script` is the Python front's own command (modelbench.script)."""
    if sys.argv[1:2] == ["script"]:
        from . import script

        return script.main(sys.argv[2:])
    host.install()
    return _lib.cli_main(["modelbench"] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
