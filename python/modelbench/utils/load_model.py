"""alma's ``alma.utils.load_model``: a TorchScript file, or weights into an
architecture."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable, Optional, Union

__all__ = ["load_model"]


def load_model(model_path: Union[str, Path], device: Any = "cpu",
               logger: Optional[Any] = None,
               modelArchitecture: Optional[Callable[[], Any]] = None) -> Any:  # noqa: N803
    """The model at model_path, in eval mode on device: a TorchScript file as
    it is, else a state_dict (loaded weights-only: no code from the file
    runs) into ``modelArchitecture()``. ValueError when the file is weights
    and no architecture is given."""
    import torch

    log = logger or logging.getLogger("modelbench")
    path = Path(model_path)
    log.info(f"Loading model from {path}")
    if not path.is_file():
        raise FileNotFoundError(f"model file {str(path)!r} does not exist")
    try:
        model = torch.jit.load(str(path), map_location=device)
    except RuntimeError:
        state = torch.load(str(path), map_location=device, weights_only=True)
        if modelArchitecture is None:
            raise ValueError(f"{path} holds weights, not TorchScript: pass "
                             "modelArchitecture (the module's class or a factory)") from None
        model = modelArchitecture()
        model.load_state_dict(state, strict=False)
        model.to(device)
    return model.eval()
