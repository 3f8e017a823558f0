"""The directory the harness puts first on the instrumented script's ``PYTHONPATH`` (holds ``sitecustomize``)."""
