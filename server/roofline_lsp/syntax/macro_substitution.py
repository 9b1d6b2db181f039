"""Substitution of a function-like macro's arguments into its body, as the preprocessor
does it, with the parentheses that would mislead a parser taken off plain arguments."""

from __future__ import annotations

import re


def substitute_macro(body: str, params: tuple[str, ...], args: list[str]) -> str:
    body = body.replace("\\\n", " ")
    if not params:
        return body
    mapping = {}
    for i, p in enumerate(params):
        if p == "...":
            mapping["__VA_ARGS__"] = ", ".join(args[i:])
        elif i < len(args):
            mapping[p] = args[i]
    if not mapping:
        return body
    # ``((x)*(n)+(y))`` with variables for x, n, y: ``(n)+(y)`` parses as a cast of ``+(y)``
    # to a type ``n``, so a parameter's parentheses go when its argument is a plain name or
    # number (not a type: ``((T)(v))`` stays a cast), unless they are a call's
    # (``static_cast<float>(x)``, ``f(x)``, ``a[i](x)``)
    bare = "|".join(re.escape(p) for p, a in mapping.items() if _plain_value(a))
    if bare:

        def unwrap(m: re.Match[str]) -> str:
            before = body[: m.start()].rstrip()
            if before and (before[-1].isalnum() or before[-1] in "_>])"):
                return m.group(0)
            return f" {m.group(1)} "

        body = re.sub(r"\(\s*(" + bare + r")\s*\)", unwrap, body)
    # ``#x`` makes a string of the argument; ``a ## b`` pastes two tokens (``REP_##n`` with
    # n = 4 is ``REP_4``), its operands substituted as they are
    body = re.sub(r"\s*##\s*", "##", body)
    names = "|".join(re.escape(p) for p in mapping)
    pattern = re.compile(r"(?<!#)#(?!#)\s*\b(" + names + r")\b|\b(" + names + r")\b")

    def rep(m: re.Match[str]) -> str:
        if m.group(1) is not None:
            return '""'
        return mapping[m.group(2)]  # literal, as the preprocessor does

    return pattern.sub(rep, body).replace("##", "")


_TYPE_WORD = re.compile(
    r"(?:unsigned|signed|float|double|int|long|short|char|bool|void|size_t|half|__half|"
    r"u?int\d+_t|(?:u?int|float|double|u?char|u?short|u?long)\d)"
)


def _plain_value(arg: str) -> bool:
    """A macro argument that is a name or a number, and no type; or a name followed by
    subscripts and members (``a[k]``, ``p[i].x``, ``q->v[j]``): a postfix expression binds
    tighter than any operator around it, and in parentheses ``(a[i]) - (a[k])`` parses as a
    cast of ``-(a[k])`` to an array type ``a[i]``."""
    a = arg.strip()
    if re.fullmatch(r"[A-Za-z_]\w*|\d[\w.]*", a):
        return not _TYPE_WORD.fullmatch(a)
    m = re.match(r"[A-Za-z_]\w*", a)
    return m is not None and not _TYPE_WORD.fullmatch(m.group(0)) and _postfix_only(a[m.end() :])


def _postfix_only(rest: str) -> bool:
    """Whether ``rest`` is nothing but ``[...]`` subscripts (brackets balanced) and ``.f`` /
    ``->f`` members."""
    i = 0
    while i < len(rest):
        if rest[i].isspace():
            i += 1
        elif rest[i] == "[":
            depth = 0
            for j in range(i, len(rest)):
                depth += {"[": 1, "]": -1}.get(rest[j], 0)
                if depth == 0:
                    break
            if depth != 0:
                return False
            i = j + 1
        elif (m := re.match(r"(?:\.|->)\s*[A-Za-z_]\w*", rest[i:])) is not None:
            i += m.end()
        else:
            return False
    return bool(rest.strip())
