"""Statements in the counter: blocks, branches, ``switch``, declarations (per-thread and
shared arrays), pragmas (``unroll``, OpenMP/OpenACC constructs) and OpenMP regions.
"""

from __future__ import annotations

import math
import re
from collections import Counter, OrderedDict
from collections.abc import Iterable

from tree_sitter import Node

from roofline_lsp.detect.pragmas import acc_loop_sharing, parse_pragma
from roofline_lsp.detect.treewalk import enclosing_function
from roofline_lsp.estimate.macro_expansion import (
    LOOP_MACRO_STATEMENTS,
    MACRO_STATEMENTS,
    loop_macro,
    pragma_statement,
    statement_macro,
)
from roofline_lsp.estimate.value_domain import DATA, NOTHING, Var, lane_slope
from roofline_lsp.estimate.walk_calls import is_lvalue
from roofline_lsp.estimate.walk_loops import LoopWalker
from roofline_lsp.estimate.walk_state import UNFOLLOWED, instantiate, teams_only
from roofline_lsp.model.kernel import Clause
from roofline_lsp.syntax.conditionals import CONDITIONALS, branch_parts, condition_holds
from roofline_lsp.syntax.datatypes import UNKNOWN, DataType
from roofline_lsp.syntax.declarations import nested_member_type
from roofline_lsp.syntax.expr import (
    array_sizes,
    binary_operands,
    condition_expr,
    declarator_stars,
    declared_name,
    detached_body,
    has_effects,
    initializer_length,
    reads_memory,
    text,
    unparenthesized,
)


class StatementWalker(LoopWalker):
    """Statements: each returns the fraction of executions that continue after it."""

    def preprocessed(self, node: Node) -> list[Node]:
        """The statements of the branch of an ``#if``/``#ifdef`` chain the preprocessor
        keeps given the macros the file, its headers and its includers define (``#define
        DIAG_ONLY 0`` / ``#if DIAG_ONLY`` takes the ``#else``); the first branch when a
        condition names a macro nothing here defines (a build's ``-D`` flag may:
        ``#ifdef OMP_TARGET`` around an offload region) or cannot be decided."""
        macros = self.inputs.macros
        values = {n: m[1] for n, m in macros.items() if m[0] is None and m[1]}
        branch: Node | None = node
        while branch is not None and branch.type in CONDITIONALS:
            taken = condition_holds(branch, lambda name, _at: name in macros or None, values)
            if taken is not False:
                break
            branch = branch.child_by_field_name("alternative")
        return branch_parts(branch) if branch is not None else []

    def run(self, body: Node) -> float:
        return self.stmt(body)

    def stmt(self, node: Node) -> float:
        """Count a statement; return the fraction of executions that continue after it."""
        self.cursor.nodes += 1
        if self.cursor.nodes > self.inputs.settings.max_nodes:
            if not self.tally.truncated_at:  # the kernel's line (a call's, inside its callee)
                inlined = self.cursor.line_base is not None
                self.tally.truncated_at = self.cursor.line if inlined else node.start_point.row + 1
            return 1.0
        t = node.type
        if self.par.pending_region is not None and t not in ("preproc_call", "comment"):
            kind = self.par.pending_region
            self.par.pending_region = None
            return self.region(kind, node)
        if self.cursor.pending_atomic and t not in ("preproc_call", "comment"):
            self.cursor.pending_atomic = False
            self.cursor.atomic = True
            try:
                return self.stmt(node)
            finally:
                self.cursor.atomic = False
        if t == "compound_statement":
            return self.block_stmts(node.named_children, scoped=True)
        if t == "expression_statement":
            self.set_line(node)
            for c in node.named_children:
                if not self.template_declaration(c):
                    self.expr(c)
            return 1.0
        if t == "declaration":
            self.set_line(node)
            self.declaration(node)
            return 1.0
        if t == "if_statement":
            return self.if_stmt(node)
        if t == "for_statement":
            self.for_stmt(node)
            return 1.0
        if t in ("while_statement", "do_statement", "for_range_loop"):
            self.while_stmt(node)
            return 1.0
        if t == "return_statement":
            self.set_line(node)
            frame = self.cursor.frames[-1]
            for c in node.named_children:
                # a returned reference the caller stores through: the element it names
                stored = frame.kind != "load" and is_lvalue(c)
                v = self.lvalue(c, frame.kind) if stored else self.expr(c)
                frame.returns.append(v)
            return 0.0
        if t in ("break_statement", "continue_statement", "goto_statement"):
            return 0.0
        if t == "switch_statement":
            return self.switch_stmt(node)
        if t in ("labeled_statement", "attributed_statement"):
            cont = 1.0
            for c in node.named_children:
                if c.type not in ("statement_identifier", "attribute_declaration"):
                    cont = self.stmt(c)
            return cont
        if t in ("preproc_if", "preproc_ifdef"):
            return self.block_stmts(self.preprocessed(node), scoped=False)
        if t == "preproc_call":
            self.pragma(node)
            return 1.0
        if t == "preproc_include":
            return self.included(node)
        if t in ("case_statement",):
            return self.block_stmts(node.named_children[1:], scoped=False)
        if t == "else_clause":
            return self.block_stmts(node.named_children, scoped=False)
        if t in ("try_statement", "seh_try_statement"):
            body = node.child_by_field_name("body")
            return self.stmt(body) if body is not None else 1.0
        if t in ("type_definition", "alias_declaration"):
            self.local_alias(node)
            return 1.0
        if t == "static_assert_declaration":
            return 1.0
        if t.endswith("_expression"):
            self.set_line(node)
            self.expr(node)
        return 1.0

    def included(self, node: Node) -> float:
        """``#include "body.h"`` inside a kernel or offload region: the header's statements
        run here (textual inclusion), their cost booked on the ``#include`` line."""
        path_node = node.child_by_field_name("path")
        if self.inputs.include is None or path_node is None:
            return 1.0
        if path_node.type != "string_literal":
            return 1.0
        including = self.cursor.include_stack[-1] if self.cursor.include_stack else ""
        found = self.inputs.include(text(path_node).strip('"'), including or self.inputs.file)
        if (
            found is None
            or found[0] in self.cursor.include_stack
            or len(self.cursor.include_stack) >= 4
        ):
            return 1.0
        path, root = found
        self.set_line(node)
        saved_base = self.cursor.line_base
        self.cursor.line_base = self.cursor.line
        self.cursor.include_stack.append(path)
        try:
            return self.block_stmts(root.named_children, scoped=False)
        finally:
            self.cursor.include_stack.pop()
            self.cursor.line_base = saved_base

    def region(self, kind: str, node: Node) -> float:
        """An OpenMP ``parallel`` (every thread of the team runs it), ``teams`` (every team)
        or ``single``/``master`` (one thread) construct."""
        saved_w, saved_pp, saved_tm = self.cursor.w, self.par.parallel_product, self.par.team_mult
        saved_level, saved_thm = self.par.team_level, self.par.thread_mult
        self.par.team_level = kind == "teams"
        if kind == "parallel":
            f = self.par.team_threads
            self.par.thread_mult *= f
        elif kind == "teams":
            f = self.par.teams
            self.par.team_mult *= f
        else:
            f = 1.0 / max(self.par.team_threads, 1.0)
        self.cursor.w *= f
        if kind != "single":
            self.par.parallel_product *= f
            self.par.max_parallel = max(self.par.max_parallel, self.par.parallel_product)
        try:
            return self.stmt(node)
        finally:
            self.cursor.w, self.par.parallel_product, self.par.team_mult = (
                saved_w,
                saved_pp,
                saved_tm,
            )
            self.par.team_level, self.par.thread_mult = saved_level, saved_thm

    def block_stmts(self, stmts: list[Node], scoped: bool) -> float:
        if scoped:
            self.cursor.scopes.append({})
        saved_w = self.cursor.w
        cont = 1.0
        skip = False
        walked_to = -1  # the end of the statements a loop or if walked as its detached body
        for i, c in enumerate(stmts):
            if skip:
                skip = False
                continue
            if c.type == "comment" or c.start_byte < walked_to:
                continue
            if self.cursor.w <= 0:
                break
            operator = pragma_statement(c, self.inputs.macros)
            if operator is not None:
                directive, after, walked_to = operator
                self.directive(directive)
                if after is None:
                    continue
                c = after  # the statement an object-like macro's operator stood before
            if c.type in LOOP_MACRO_STATEMENTS:
                nxt = stmts[i + 1] if i + 1 < len(stmts) else None
                looped = loop_macro(c, nxt, self.inputs.macros)
                if looped is not None:
                    c, skip = looped
            if c.type in MACRO_STATEMENTS:
                expanded = statement_macro(c, self.inputs.macros)
                if expanded is not None:
                    name, tree, walked_to = expanded
                    self.set_line(c)
                    self.in_macro(name, tree, expression=False)
                    continue
            k = self.stmt(c)
            detached = (
                detached_body(c)
                if c.type in ("for_statement", "while_statement", "if_statement")
                else []
            )
            if detached:
                walked_to = detached[-1].end_byte
            if k < 1.0:
                cont *= k
                self.cursor.w = saved_w * cont
        self.cursor.w = saved_w
        if scoped:
            self.cursor.scopes.pop()
        return cont

    def pragma(self, node: Node) -> None:
        if text(node).lstrip("# \t").startswith("pragma"):
            self.directive(text(node.child_by_field_name("argument")).strip())

    def directive(self, arg: str) -> None:
        """What a pragma's directive (``unroll 4``, ``omp parallel for``, of a ``#pragma``
        line or a ``_Pragma`` operator) sets for the statement after it."""
        words = arg.split()
        if not words:
            return
        if words[0] == "unroll":
            n = None
            if len(words) > 1:
                n = self.lookup_num(" ".join(words[1:]).strip("()"))
            self.cursor.pending_unroll = n if n else math.inf
        elif words[0] in ("omp", "acc") and len(words) > 1 and words[1] == "atomic":
            # ``update``/``capture`` (the default) run one read-modify-write in memory
            self.cursor.pending_atomic = not ({"read", "write"} & set(words[2:]))
        elif words[0] == "acc" and self.inputs.offload:
            parsed = parse_pragma(arg)
            self.private_copies(parsed.clauses)
            sharing = acc_loop_sharing(parsed)
            if sharing is not None:
                self.par.pending_parallel = sharing.collapse
                self.par.pending_distribute = sharing.gangs
        elif words[0] == "omp" and self.inputs.offload:
            self.private_copies(parse_pragma(arg).clauses)
            rest = set(words[1:])
            workshare = {"for", "distribute", "loop"} & rest
            if workshare:
                m = re.search(r"collapse\s*\(\s*(\d+)\s*\)", arg)
                self.par.pending_parallel = int(m.group(1)) if m else 1
                self.par.pending_distribute = "distribute" in rest or "gang" in rest
                self.par.pending_teams_only = teams_only(rest)
            elif "parallel" in rest:
                self.par.pending_region = "parallel"
            elif "teams" in rest:
                self.par.pending_region = "teams"
            elif rest & {"single", "master", "masked"}:
                self.par.pending_region = "single"

    def if_stmt(self, node: Node) -> float:
        self.set_line(node)
        cond = node.child_by_field_name("condition")
        if node.id in self.cursor.counted_exits:
            # the exit test of a loop its trips count: it costs its test, and what follows
            # runs every counted trip
            test = condition_expr(node)
            if test is not None:
                self.expr(test)
            return 1.0
        p = self.inputs.settings.default_branch
        if cond is not None:
            inner = cond.child_by_field_name("value") or (
                cond.named_children[-1] if cond.named_children else cond
            )
            self.expr(inner)
            p = self.probability(inner)
        cons = node.child_by_field_name("consequence")
        alt = node.child_by_field_name("alternative")
        saved = self.cursor.w
        cont_a = cont_b = 1.0
        if p in (0, 1) and cond is not None and self.decided(inner):
            dead = cons if p == 0 else alt
            if dead is not None:
                self.never_runs(dead, cond)
        before = self.values() if 0 < p < 1 else None
        # the share of a test on data read from memory is a guess (``Access.guessed``)
        guessed = before is not None and cond is not None and DATA in self.expr_quiet(inner).deps
        self.cursor.guessed_depth += guessed
        if cons is not None and p > 0:
            self.cursor.w = saved * p
            self.cursor.scopes.append({})
            pinned = self.cursor.pinned_lane
            self.cursor.pinned_lane = pinned or (cond is not None and self.pins_lane(inner))
            try:
                for part in detached_body(node) or [cons]:
                    cont_a = self.stmt(part)
            finally:
                self.cursor.pinned_lane = pinned
            self.cursor.scopes.pop()
        taken = self.values() if before is not None else None
        if alt is not None and p < 1:
            self.cursor.w = saved * (1 - p)
            self.cursor.scopes.append({})
            cont_b = self.stmt(alt)
            self.cursor.scopes.pop()
        self.cursor.guessed_depth -= guessed
        if before is not None and taken is not None:
            self.join_values(before, taken, p)
        self.cursor.w = saved
        return p * cont_a + (1 - p) * cont_b

    def decided(self, cond: Node) -> bool:
        """Whether ``cond`` has one value the known values give (``d > 0`` of a kernel
        argument the host sets), not a share the model assumes (a bounds check)."""
        v = self.expr_quiet(cond)
        return v.val is not None and not v.deps

    def never_runs(self, branch: Node, cond: Node) -> None:
        """A branch the known values decide against is not walked: its lines have no
        weight, and the compiler's code for them (for the case it cannot rule out) costs
        nothing where a branch on ``cond`` skips it (``ptx_substitution``); code computed on
        both paths and selected runs whatever the condition."""
        if self.cursor.line_base is not None:
            return  # (an inlined callee's lines are booked on the call's line)
        test = (cond.start_point.row + 1, cond.end_point.row + 1)
        for ln in range(branch.start_point.row + 1, branch.end_point.row + 2):
            self.tally.dead_lines.setdefault(ln, test)

    def pins_lane(self, cond: Node) -> bool:
        """``iz == 0`` with iz moving across the lanes of a warp (a face of a grid): one
        lane value takes the branch."""
        sides = binary_operands(unparenthesized(cond), ("==",))
        if sides is None:
            return False
        a, b = self.expr_quiet(sides[0]), self.expr_quiet(sides[1])
        lane = self.par.lane
        for moving, fixed in ((a, b), (b, a)):
            slope = lane_slope(moving, lane)
            if slope and lane not in fixed.deps:  # (``row == col``: both move, no face)
                return True
        return False

    def switch_stmt(self, node: Node) -> float:
        self.set_line(node)
        cond = node.child_by_field_name("condition")
        if cond is not None:
            self.expr(cond)
        body = node.child_by_field_name("body")
        if body is None:
            return 1.0
        cases = [c for c in body.named_children if c.type == "case_statement"]
        if not cases:
            return 1.0
        saved = self.cursor.w
        self.cursor.w = saved / len(cases)
        for c in cases:
            self.cursor.scopes.append({})
            self.block_stmts(
                [x for x in c.named_children if x != c.child_by_field_name("value")], False
            )
            self.cursor.scopes.pop()
        self.cursor.w = saved
        return 1.0

    def never_read(self, name: str, declarator: Node, value: Node) -> bool:
        """A local whose name occurs nowhere else in its function (nor in a macro body or an
        ``#include``d file it could be read from), initialised without side effects."""
        fn = enclosing_function(declarator)
        if fn is None or has_effects(value):
            return False
        words = _words(fn)
        if not words or words[name] > 1:
            return False
        word = re.compile(rf"\b{re.escape(name)}\b")
        return not any(word.search(body) for _params, body in self.inputs.macros.values())

    def declaration(self, node: Node) -> None:
        type_node = node.child_by_field_name("type")
        base_text = text(type_node)
        head = text(node)[: (type_node.start_byte - node.start_byte) if type_node else 0]
        # OpenMP: variables declared in a teams region outside its parallel regions are
        # shared by the team (in shared memory)
        shared = "__shared__" in head or "__shared__" in base_text or self.par.team_level
        const = "const" in head or "constexpr" in head
        group = self.group_of_type(base_text)
        names = [declared_name(d) for d in node.children_by_field_name("declarator")]
        for d in node.children_by_field_name("declarator"):
            name = declared_name(d)
            if not name:
                continue
            stars = declarator_stars(d)
            vt = self.type_of(base_text + " " + stars.replace("[]", "*"))
            value_node = d.child_by_field_name("value") if d.type == "init_declarator" else None
            arrdims = stars.count("[]")
            if base_text == "auto" or base_text.endswith(" auto"):
                vt = UNKNOWN
            if arrdims and not shared:
                self.local_array_size(name, d, vt)
            if value_node is not None and arrdims:
                held: frozenset[str] = NOTHING
                for c in value_node.named_children:
                    held = held | self.expr(c).deps
                space = "shared" if shared else "local"
                arr = Var(vt, NOTHING, None, space, name, arrdims)
                arr.held = held
                self.declare(name, arr)
                continue
            if value_node is not None and self.never_read(name, d, value_node):
                # computed and never used: the compiler removes it (a dead ``double t``)
                self.declare(name, Var(vt, frozenset({DATA})))
                continue
            # an object built by a constructor, or left to be filled field by field: the
            # walk does not track its fields, so their values are unexplained
            opaque = (
                NOTHING if vt.pointer or vt.kind != "unknown" else frozenset({DATA, UNFOLLOWED})
            )
            if value_node is not None:
                if value_node.type in ("initializer_list", "argument_list"):
                    deps: frozenset[str] = opaque if value_node.type == "argument_list" else NOTHING
                    last = None
                    for c in value_node.named_children:
                        last = self.expr(c)
                        deps = deps | last.deps
                    val = (
                        last.val
                        if last is not None and len(value_node.named_children) == 1
                        else None
                    )
                    self.declare(name, Var(vt, deps, val, const=const, group=group))
                    continue
                v = self.stored_as(value_node, vt)
                if vt is UNKNOWN or vt.kind == "unknown" and v.type.kind != "unknown":
                    vt = v.type
                if vt.pointer and v.buffer:
                    ptr = Var(vt, v.deps, None, v.space, v.buffer, arrdims, const=const)
                    ptr.slope = v.slope
                    self.declare(name, ptr)
                    continue
                val = v.val
                if val is not None and vt.kind == "int":
                    val = float(math.trunc(val)) if not v.deps else val
                g = v.group if v.group is not None else group
                local = Var(vt, v.deps, val, const=const, rng=v.rng, group=g)
                # (``const int im = 134456``: a constant the compiler sees)
                local.fixed = const and val is not None and self.compile_time(value_node)
                local.gathered = reads_memory(value_node)
                local.slope = v.slope
                local.test = self.test_held_by(value_node)
                self.declare(name, local)
                continue
            if arrdims:
                space = "shared" if shared else "local"
                self.declare(name, Var(vt, NOTHING, None, space, name, arrdims))
            elif shared:
                self.declare(name, Var(vt, NOTHING, None, "shared", name))
            else:
                self.declare(
                    name, Var(vt, NOTHING if group is not None else opaque, None, group=group)
                )
        for d in node.children_by_field_name("declarator"):
            declared = self.var(declared_name(d)) if not declarator_stars(d) else None
            if declared is not None and not declared.tname:  # ``Param<float> q``: its fields
                instantiate(declared, base_text, self.inputs.structs, self.inputs.struct_templates)
        for name in names:
            declared = self.cursor.scopes[-1].get(name) if name else None
            if declared is not None:
                declared.tname = base_text.replace("const", "").strip()

    def local_alias(self, node: Node) -> None:
        """A type alias in the body (``typedef TxN_t<data_t, veclen_> VecType;``, ``using
        V = ...``): the type it names, with the names the walk has bound in."""
        ty = node.child_by_field_name("type")
        if ty is None:
            return
        if node.type == "alias_declaration":
            names = [text(node.child_by_field_name("name"))]
        else:
            names = [
                text(d)
                for d in node.children_by_field_name("declarator")
                if d.type == "type_identifier"
            ]
        # (``using T2 = typename TypeConverter<T>::Type``: the member of T's instance)
        bound = nested_member_type(self.bound_text(text(ty)), self.inputs.member_types)
        self.bind_local_types({n: bound for n in names if n})

    def template_declaration(self, node: Node) -> bool:
        """A declaration with a template type that the parser read as comparisons,
        ``tile_t<32> w = make(...)`` as ``(tile_t < 32) > (w = make(...))``: declare ``w``
        (its type, a cooperative group's size). False when ``node`` is not one."""
        if node.type != "binary_expression":
            return False
        op = node.child_by_field_name("operator")
        left = node.child_by_field_name("left")
        right = node.child_by_field_name("right")
        if op is None or op.type != ">" or left is None or right is None:
            return False
        lop = left.child_by_field_name("operator")
        if left.type != "binary_expression" or lop is None or lop.type != "<":
            return False
        if right.type != "assignment_expression":
            return False
        if text(right.child_by_field_name("operator")) != "=":
            return False
        target = right.child_by_field_name("left")
        value = right.child_by_field_name("right")
        if target is None or target.type != "identifier" or value is None:
            return False
        type_text = text(left) + ">"
        v = self.expr(value)
        group = self.group_of_type(type_text)
        vt = self.type_of(type_text)
        if vt.kind == "unknown":
            vt = v.type
        g = v.group if v.group is not None else group
        self.declare(text(target), Var(vt, v.deps, v.val, rng=v.rng, group=g))
        return True

    def private_copies(self, clauses: Iterable[Clause]) -> None:
        """OpenMP ``private``/``firstprivate``/``lastprivate`` and OpenACC ``private``/
        ``firstprivate`` clauses: each thread works on its own copy of the named host
        variables, not on the one host object. An array (``float t[64]``, a section
        ``t[0:64]``) is a per-thread array like one declared in the loop body (in local
        memory when indexed at run time); a ``private`` scalar starts with no value, a
        ``firstprivate`` array the region only reads keeps the host's values. An array
        reduced (``reduction(+: hist[0:64])``) is a private copy too, which the runtime
        combines after the loop."""
        for c in clauses:
            if c.name not in ("private", "firstprivate", "lastprivate", "reduction"):
                continue
            for item in c.items:
                m = re.match(r"\s*([A-Za-z_]\w*)\s*(\[.*)?$", item, re.S)
                v = self.var(m.group(1)) if m else None
                if m is None or v is None:
                    continue
                name = m.group(1)
                if v.arrdims or (v.type.pointer and m.group(2)):
                    if c.name == "firstprivate" and name not in self.inputs.written:
                        continue  # copies only read: the host's values (``cfg[1]``), as shared
                    section = re.findall(r"\[[^\]:]*:([^\]]*)\]", m.group(2) or "")
                    n = 1.0
                    for length in section:
                        k = self.lookup_num(length.strip())
                        n = n * k if k else math.nan
                    if not section:
                        n = self.inputs.extents.get(name, math.nan)
                    dims = max(v.arrdims, len(section), 1)
                    elem = v.type.deref(dims)
                    if not n > 0 or elem.pointer:
                        continue
                    self.tally.local_sizes[name] = n * self.type_bytes(elem)
                    self.declare(name, Var(v.type, NOTHING, None, "local", name, dims))
                elif c.name not in ("firstprivate", "reduction") and not v.type.pointer:
                    self.declare(name, Var(v.type))

    def local_array_size(self, name: str, decl: Node, vt: DataType) -> None:
        """Bytes of a per-thread array (``float acc[64]``), for local-memory traffic; an
        array sized by its initializer (``float w[] = {1, 2, 3}``) has as many elements."""
        n = 1.0
        d = decl.child_by_field_name("declarator") if decl.type == "init_declarator" else decl
        init = decl.child_by_field_name("value") if decl.type == "init_declarator" else None
        sizes = array_sizes(d) if d is not None else []
        for i, size in enumerate(sizes):
            v = self.expr_quiet(size).val if size is not None else None
            if v is None and i == 0:
                v = initializer_length(init)
            if v is None or v <= 0:
                return
            n *= v
        self.tally.local_sizes[name] = n * self.type_bytes(vt.deref(len(sizes)))


# a function's identifiers and how often each occurs, by its node (kept across walks: the
# offload regions of one long ``main`` share it)
_WORDS: OrderedDict[int, tuple[Node, Counter[str]]] = OrderedDict()


def _words(fn: Node) -> Counter[str]:
    """How often each identifier occurs in function ``fn`` (none when an ``#include`` in it
    may read anything)."""
    hit = _WORDS.get(fn.id)
    if hit is not None and hit[0] == fn:
        return hit[1]
    body = text(fn)
    words = Counter() if "#include" in body else Counter(re.findall(r"[A-Za-z_]\w*", body))
    _WORDS[fn.id] = (fn, words)
    if len(_WORDS) > 256:
        _WORDS.popitem(last=False)
    return words
