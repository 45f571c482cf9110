"""``python -m fastsim.cli``: the same as the ``fastsim`` command."""
from . import main

if __name__ == "__main__":
    main()
