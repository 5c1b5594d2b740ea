"""EXPORT+EAGER: a torch.export program, run as a module."""

from ..catalog import Conversion
from ._export import exported, load_program, save_program
from .base import ConvertContext, Converted

CONVERSION = Conversion(
    id=80,
    name="EXPORT+EAGER",
    torch="2.1",
    description=(
        "torch.export.export on sample 0's shapes, the program's module() "
        "run eagerly (the ATen graph, no Python control flow)"
    ),
    alma="EXPORT+EAGER",
    devices=("cpu", "cuda"),
)


def convert(model, ctx: ConvertContext) -> Converted:
    """Exports the module; the program's graph module is the callable."""
    program = exported(model, ctx)
    return Converted(fn=program.module(), keep=program)


def save(converted: Converted, folder: str) -> None:
    """Keeps the exported program (torch.export.save)."""
    save_program(converted.keep, folder)


def load(folder: str, ctx: ConvertContext) -> Converted:  # noqa: ARG001
    """The program save kept, as a module."""
    program = load_program(folder)
    return Converted(fn=program.module(), keep=program)
