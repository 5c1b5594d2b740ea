"""PyTorch conversion options, one file each (see base.py)."""
