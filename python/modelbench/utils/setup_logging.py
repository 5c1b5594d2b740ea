"""alma's ``alma.utils.setup_logging``."""

from ..logs import setup_logging

__all__ = ["setup_logging"]
