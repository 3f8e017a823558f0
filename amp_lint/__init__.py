"""amp-lint: find and fix FP16 / mixed-precision hazards in PyTorch code."""

__version__ = "0.1.0"
DOCS_URL = "https://github.com/amp-lint/amp-lint/blob/main/rules"
#: ``--output-format`` values (here, so that the CLI can list them without importing the reporters).
OUTPUT_FORMATS = ("concise", "full", "json", "json-lines", "github", "sarif")
