"""``save_dict_to_json`` where alma's examples import it from."""

from . import save_dict_to_json

__all__ = ["save_dict_to_json"]
