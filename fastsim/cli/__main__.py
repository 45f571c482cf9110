"""``python -m fastsim.cli``: the same as the ``fastsim`` command."""
from . import script

if __name__ == "__main__":
    script()
