"""Analyses: walker participants that run before the rules and answer their questions.

Each has a ``key``; a rule lists the keys it needs in ``requires`` and reads the analysis via
``ctx.analyses[key]``.
"""
from amp_lint.analysis.constants import ConstantTable
from amp_lint.analysis.precision import PrecisionAnalysis
from amp_lint.analysis.training_loop import TrainingLoops

ANALYSES = [ConstantTable, TrainingLoops, PrecisionAnalysis]
