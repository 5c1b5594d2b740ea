"""alma's ``alma.conversions.conversion_options``: its options by id."""

from __future__ import annotations

from typing import Any, List

from .alma import MODEL_CONVERSION_OPTIONS, AlmaOption

ConversionOption = AlmaOption

__all__ = ["ConversionOption", "MODEL_CONVERSION_OPTIONS", "conversions_to_modes",
           "mode_str_to_conversions"]


def conversions_to_modes(conversions: List[Any]) -> List[str]:
    """Mode names of a list of names and options."""
    modes = []
    for c in conversions:
        mode = getattr(c, "mode", c)
        if not isinstance(mode, str):
            raise ValueError(f"Invalid conversion type: {type(c)}. Expected str or "
                             "ConversionOption.")
        modes.append(mode)
    return modes


def mode_str_to_conversions(conversions: List[str]) -> List[AlmaOption]:
    """alma's options of a list of mode names, in the order given (alma's own
    returns its table's order)."""
    by_mode = {o.mode: o for o in MODEL_CONVERSION_OPTIONS.values()}
    return [by_mode[c] for c in conversions if c in by_mode]
