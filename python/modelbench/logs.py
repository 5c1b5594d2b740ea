"""setup_logging: alma's logging set-up, for the "modelbench" loggers too."""

from __future__ import annotations

import logging
from typing import Optional

from .errors import ConfigError

_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def setup_logging(log_file: Optional[str] = None, level: str = "INFO") -> None:
    """Logs to the console (and to log_file when given) at `level`.

    At DEBUG the engine's own logs come through too: the exporter's warnings,
    and the tail of every conversion's log (ONNX Runtime's, oneDNN's, a
    worker's traceback). Raises ConfigError (a ValueError) naming an unknown level.
    """
    if not isinstance(level, str) or level.upper() not in _LEVELS:
        raise ConfigError(f"level must be one of {', '.join(_LEVELS)}, got {level!r}")
    handlers: list = [logging.StreamHandler()]
    if log_file:
        handlers.append(logging.FileHandler(log_file))
    logging.basicConfig(
        level=getattr(logging, level.upper()),
        format="%(levelname)s: [%(name)s] %(message)s",
        handlers=handlers,
        force=True,
    )
    logging.getLogger("modelbench").setLevel(getattr(logging, level.upper()))


def engine_log_level() -> str:
    """The engine's --log-level matching the "modelbench" logger's level."""
    level = logging.getLogger("modelbench").getEffectiveLevel()
    if level <= logging.DEBUG:
        return "debug"
    if level <= logging.INFO:
        return "info"
    if level <= logging.WARNING:
        return "warn"
    return "error"
