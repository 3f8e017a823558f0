"""Run-time checks: ``amp-lint verify`` and ``amp-lint trace`` (the ``amp-lint[runtime]`` extra).

Nothing here imports torch in the amp-lint process: scripts run in subprocesses, instrumented by
``instrument.py`` and ``optrace.py`` (loaded there through ``_site/sitecustomize.py``);
``harness.py`` starts them and reads their record, ``target.py`` resolves, mirrors and explains the
scripts, ``verify.py`` and ``trace.py`` turn records into verdicts, and ``static.py`` is the one
place that asks the static analysis for its findings or fixes.
"""
