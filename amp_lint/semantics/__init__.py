"""Semantics: what the analysed program computes, in precision terms. It knows no rule.

- :mod:`values`: the lattice (dtype sets, scalars with constants, module instances with their
  cast, recognised library objects, autocast context managers) and its join.
- :mod:`program`: source modules, import resolution, function and class infos.
- :mod:`torch_api`: how torch and library calls behave (driven by the tables in
  :mod:`amp_lint.data`): transfer functions, casts, autocast, optimizers, scalers, frameworks.
- :mod:`configfiles`: the config files the program loads by a known path (YAML, JSON), as data.
- :mod:`interpreter`: a flow-sensitive abstract interpreter over Python's ``ast``: every module's
  top level is run, functions are analysed per calling context (argument values, receiver, autocast
  state) and memoised, with the value of each expression recorded per context.
- :mod:`facts`: what rules may ask: the observations of a node (its operands' values, the autocast
  state, the call path and the evidence for a half dtype), and `explain` for one line.
"""
