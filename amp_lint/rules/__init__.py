"""The rule registry: every ``ampNNN_<name>.py`` module in this package defines one Rule."""
from __future__ import annotations

import importlib
import pkgutil
from typing import Dict, List, Type

from amp_lint.data.catalog import RESERVED_CODES
from amp_lint.rules.base import Rule

__all__ = ["ALL_RULES", "RESERVED_CODES", "RULES_BY_CODE", "rule_for"]



def _load() -> List[Type[Rule]]:
    rules: List[Type[Rule]] = []
    for info in pkgutil.iter_modules(__path__):
        if not (info.name.startswith("amp") and info.name[3:6].isdigit()):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        found = [
            obj for obj in vars(module).values()
            if isinstance(obj, type) and issubclass(obj, Rule) and obj is not Rule and obj.__module__ == module.__name__
        ]
        if len(found) != 1:
            raise RuntimeError(f"{info.name} must define exactly one rule, found {len(found)}")
        rules.append(found[0])
    return sorted(rules, key=lambda r: r.code)


ALL_RULES: List[Type[Rule]] = _load()
RULES_BY_CODE: Dict[str, Type[Rule]] = {rule.code: rule for rule in ALL_RULES}


def rule_for(code_or_name: str) -> Type[Rule]:
    """Look a rule up by code (``AMP301``) or name (``fp16-overflowing-constant``)."""
    key = code_or_name.strip()
    if key.upper() in RULES_BY_CODE:
        return RULES_BY_CODE[key.upper()]
    for rule in ALL_RULES:
        if rule.name == key:
            return rule
    raise KeyError(code_or_name)
