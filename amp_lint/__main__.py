"""``python -m amp_lint``."""
from amp_lint.cli import main

if __name__ == "__main__":
    main(prog_name="amp-lint")
