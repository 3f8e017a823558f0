"""Small helpers for building replacement nodes."""
from __future__ import annotations

from typing import List, Optional, Sequence

import libcst as cst

_COMMA = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


def expr(text: str) -> cst.BaseExpression:
    return cst.parse_expression(text)


def string(value: str) -> cst.SimpleString:
    return cst.SimpleString(f'"{value}"')


def positional(value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(value=value)


def keyword(name: str, value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(
        value=value,
        keyword=cst.Name(name),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )


def as_keyword(arg: cst.Arg, name: str) -> cst.Arg:
    """``arg`` (positional) passed as ``name=`` keeping its comma and whitespace."""
    return arg.with_changes(
        keyword=cst.Name(name),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )


def join_args(args: Sequence[cst.Arg]) -> List[cst.Arg]:
    """Args with a comma after every one but the last (which keeps whatever comma it had)."""
    out: List[cst.Arg] = []
    for i, arg in enumerate(args):
        last = i == len(args) - 1
        if not last and arg.comma is cst.MaybeSentinel.DEFAULT:
            arg = arg.with_changes(comma=_COMMA)
        out.append(arg)
    return out


def call(func: cst.BaseExpression, args: Sequence[cst.Arg], like: Optional[cst.Call] = None) -> cst.Call:
    """A call of ``func``; with ``like``, keeps that call's parentheses and whitespace."""
    if like is not None:
        return like.with_changes(func=func, args=join_args(args))
    return cst.Call(func=func, args=join_args(args))


_ATOMIC = (cst.Name, cst.Attribute, cst.Call, cst.Subscript)


def parenthesized(node: cst.BaseExpression) -> cst.BaseExpression:
    """``node``, in parentheses unless it binds tighter than attribute access already."""
    if isinstance(node, _ATOMIC) or node.lpar:
        return node
    return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def method_call(node: cst.BaseExpression, method: str, args: Sequence[cst.Arg] = ()) -> cst.Call:
    """``node.method(args)``, parenthesising ``node`` when needed."""
    return cst.Call(func=cst.Attribute(value=parenthesized(node), attr=cst.Name(method)), args=list(args))


def copy_of(node: cst.CSTNode, code: str) -> cst.BaseExpression:
    """A fresh expression with the text of ``node`` (``code``), safe to place elsewhere."""
    return cst.parse_expression(code)
