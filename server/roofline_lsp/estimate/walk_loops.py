"""Loops in the counter: trip counts (constant, argument, launch, grid-stride, defaults for
unknown bounds), the loop variable's mean and range, unrolling of the loop control and
OpenMP/OpenACC work-shared loops.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass

from tree_sitter import Node

from roofline_lsp.estimate import costs
from roofline_lsp.estimate.macro_expansion import expand_text
from roofline_lsp.estimate.row_ranges import row_range
from roofline_lsp.estimate.sampled_trips import sampled_trips
from roofline_lsp.estimate.thread_counts import STRIDED, Loop, control_passes
from roofline_lsp.estimate.value_domain import (
    DATA,
    NOTHING,
    THREAD_DIMS,
    Val,
    Var,
    fold_binary,
    lane_slope,
)
from roofline_lsp.estimate.walk_calls import CallWalker
from roofline_lsp.estimate.walk_groups import WARP
from roofline_lsp.syntax.cexpr import evaluate
from roofline_lsp.syntax.datatypes import FLOAT, INT
from roofline_lsp.syntax.expr import (
    FLIPPED,
    GuardedExit,
    LoopHeader,
    body_update,
    condition_expr,
    counted_exit,
    declared_name,
    detached_body,
    guarded_exit,
    identifiers,
    loop_header,
    reads_memory,
    root_identifier,
    text,
    trips,
    unparenthesized,
    value,
    while_header,
)
from roofline_lsp.syntax.hints import loop_trips_hint


class LoopWalker(CallWalker):
    """``for``, ``while``, ``do`` and range-``for`` loops."""

    def while_stmt(self, node: Node) -> None:
        self.set_line(node)
        n = self.default(self.inputs.settings.default_while)
        source = "default"
        final: tuple[str, float] | None = None
        self.cursor.pending_unroll = None
        self.par.pending_parallel = 0
        cond = node.child_by_field_name("condition")
        body = node.child_by_field_name("body")
        var_name = None
        searched: float | None = None  # a binary search's width
        descent: float | None = None  # ... by descending a halving step (``idx | k``)
        hdr: LoopHeader | None = None
        if node.type == "for_range_loop":
            right = node.child_by_field_name("right")
            if right is not None:
                self.expr(right)
        else:
            hdr = while_header(node)
            if hdr is not None:
                trip, src, _start = self.trip_count(hdr)
                self.count_exit(node, src)
                if src != "default":
                    n, source, var_name = trip, src, hdr.var
                    if node.type == "do_statement":
                        # the body runs before the first test: one more trip than the
                        # tests that pass when the test steps the counter (``--c > 0``)
                        n = n + 1.0 if hdr.pre_step else max(n, 1.0)
                    held = self.var(hdr.var) if hdr.var else None
                    descent = self.descent_width(hdr, held.val if held else None, n, body)
            if (
                source == "default"
                and node.type == "do_statement"
                and value(cond, lambda _name: None) == 0
            ):
                n, source = 1.0, "constant"  # ``do { ... } while (0)``: a macro's one pass
            if source == "default" and cond is not None and body is not None:
                searched = self.bisection_width(cond, body)
                if searched is not None:
                    # the interval halves each trip: log2 of its width, and the last trip
                    n, source = math.floor(math.log2(searched)) + 1.0, "bisection"
            if source == "default" and body is not None:
                counted = self.bit_length_trips(node, body)
                if counted is not None:
                    (n, final), source = counted, "bit length"
                    var_name = final[0]
        hinted = hinted_trips(node)
        if hinted is not None:
            n, source = hinted, "hint"
        dim = self.new_loop_dim(n, source)
        if searched is not None and source == "bisection":  # (not a hint's trips)
            self.dimensions.searches[dim] = (searched, n)
        elif descent is not None and hinted is None:
            self.dimensions.searches[dim] = (descent, n)
        names, data = self.unknown_bound(hdr if node.type != "for_range_loop" else None, source)
        first, last = self.loop_lines(node)
        self.tally.loop_records.append(
            Loop(
                first,
                var_name,
                n,
                source,
                self.cursor.w,
                end_line=last,
                unknown_names=names,
                data_bound=data,
                inlined=self.cursor.line_base is not None,
                macro=self.cursor.macro_line is not None,
            )
        )
        if var_name and hdr is not None:
            v = self.var(var_name)
            if v is not None:
                # the counter sweeps its trips: ``while (i < n) { ...; i += stride; }``
                v.deps = v.deps | {dim}
                step = self.step_value(hdr) if hdr.step_op in ("+", "-") else None
                if step is None or v.rng is None:
                    v.val = v.rng = None
                else:
                    span = (step if hdr.step_op == "+" else -step) * max(n - 1, 0)
                    v.rng = (v.rng[0] + min(span, 0.0), v.rng[1] + max(span, 0.0))
                    v.val = None if v.val is None else v.val + span / 2
        saved = self.cursor.w
        self.cursor.loops.append((dim, n, False))
        self.cursor.loop_stores.append((dim, stored_buffers(body)))
        self.cursor.seen.append(set())
        self.cursor.w = saved * n
        self.cursor.scopes.append({})
        if node.type == "for_range_loop":
            left = node.child_by_field_name("declarator")
            if left is not None:
                self.declare(
                    declared_name(left), Var(FLOAT, frozenset({dim, DATA}))
                )  # element type unknown
        if cond is not None:
            self.expr(cond)  # the test runs every iteration (while loops are not unrolled)
        unknown = source == "default"
        self.cursor.unknown_depth += unknown
        for part in detached_body(node) or ([body] if body is not None else []):
            self.mark_loop_carried(part, dim, var_name)
            self.stmt(part)
        self.cursor.unknown_depth -= unknown
        self.cursor.scopes.pop()
        self.cursor.seen.pop()
        self.cursor.loops.pop()
        self.cursor.loop_stores.pop()
        self.cursor.w = saved
        if final is not None:  # the counter's value after the loop is known too
            v = self.var(final[0])
            if v is not None:
                v.val, v.rng, v.deps = final[1], (final[1], final[1]), NOTHING

    def bit_length_trips(self, node: Node, body: Node) -> tuple[float, tuple[str, float]] | None:
        """``while (n >> nbits) nbits++;``: counts the bits of ``n`` from the counter's
        value on entry, so it runs bit_length(n) - nbits times and leaves the bit length in
        the counter. (trips, (counter, value after)); None when it is not one or ``n`` or
        the counter's start is unknown."""
        c = condition_expr(node)
        if c is not None and c.type == "binary_expression" and _operator(c) in ("!=", ">"):
            right = c.child_by_field_name("right")
            if right is None or value(right, lambda _name: None) != 0:
                return None
            c = unparenthesized(c.child_by_field_name("left") or c)
        if c is None or c.type != "binary_expression" or _operator(c) != ">>":
            return None
        shifted, count = c.child_by_field_name("left"), c.child_by_field_name("right")
        if shifted is None or count is None or count.type != "identifier":
            return None
        step = body_update(body, text(count))
        if (
            step is None
            or step[1] != "+"
            or (step[0] is not None and value(step[0], lambda _name: None) != 1)
        ):
            return None
        counter = self.var(text(count))
        x = self.expr_quiet(shifted).val
        if counter is None or counter.val is None or x is None or x < 0:
            return None
        bits = float(int(x).bit_length())
        return max(bits - counter.val, 0.0), (text(count), max(bits, counter.val))

    def bisection_width(self, cond: Node, body: Node) -> float | None:
        """A binary search (``while (lo < hi)``, ``while (hi - lo > 1)`` whose body sets
        ``mid = (lo + hi) / 2`` or ``lo + (hi - lo) / 2`` and moves ``lo`` or ``hi`` to it):
        the width ``hi - lo`` of the interval on entry (at least 1); None when it is not one
        or the values are unknown."""
        names = list(dict.fromkeys(identifiers(cond)))
        if len(names) != 2:
            return None
        lo, hi = names
        moved = assigned_names(body)
        if lo not in moved and hi not in moved:
            return None
        halves = set()
        for a, b in ((lo, hi), (hi, lo)):
            halves |= {
                f"({a}+{b})/2",
                f"{a}+({b}-{a})/2",
                f"({a}+{b})>>1",
                f"{a}+(({b}-{a})>>1)",
                f"{a}+({b}-{a})>>1",
            }
        if not any(_compact(v) in halves for v in _assigned_values(body)):
            return None
        vlo, vhi = self.var(lo), self.var(hi)
        if vlo is None or vhi is None:
            return None
        if vlo.val is not None and vhi.val is not None:
            width = abs(vhi.val - vlo.val)
        elif vlo.rng is not None and vhi.rng is not None:
            # bounds that vary by thread within known intervals (``begin = max(0, diag -
            # n)``, ``end = min(diag, m)``): at most the widest interval they make
            width = max(vhi.rng[1] - vlo.rng[0], vlo.rng[1] - vhi.rng[0])
        else:
            return None
        return max(width, 1.0)

    def descent_width(
        self, hdr: LoopHeader | None, start: float | None, trips: float, body: Node | None
    ) -> float | None:
        """A search by halving steps (``for (k = n / 2; k > 0; k >>= 1)``, ``while (k >>=
        1)``) whose body moves a position by what it reads (``if (a[idx | k] <= z) idx |=
        k;``): the elements it searches, twice the first step (the counter on entry; else
        2^trips); None when it is not one."""
        if hdr is None or hdr.step_op not in (">>", "/") or body is None or trips < 1:
            return None
        step = self.step_value(hdr)
        if step is None or step != (1 if hdr.step_op == ">>" else 2) or not _steered(body):
            return None
        return 2 * start if start is not None and start >= 1 else 2.0**trips

    def stepped_trips(
        self, hdr: LoopHeader, loop: Node, guard: GuardedExit | None = None
    ) -> float | None:
        """``for (j = 1; j * j <= m; j++)``, ``for (s = 0; (1 << s) < n; s++)``: a counter
        inside one side of the test, the other side known. Stepping the counter until the
        test fails counts the trips (the side taken as monotone in it: a doubling search,
        then bisection); None when a value is unknown or read from memory. ``guard``: a loop
        without a test left by its body's ``if (test) break;`` after declarations of values
        computed from the counter (:func:`guarded_exit`): it runs while the test fails."""
        if guard is not None:
            cond: Node | None = guard.test
        else:
            cond = loop.child_by_field_name("condition") if loop.type == "for_statement" else None
        var = self.var(hdr.var) if hdr.var else None
        if cond is None or cond.type != "binary_expression" or var is None or hdr.var is None:
            return None
        op = cond.child_by_field_name("operator")
        left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
        o = op.type if op is not None else ""
        if left is None or right is None or o not in FLIPPED:
            return None
        counted = {hdr.var, *(guard.names if guard is not None else ())}
        in_left = bool(counted.intersection(identifiers(left)))
        in_right = bool(counted.intersection(identifiers(right)))
        if in_left == in_right:
            return None
        side, other, o = (left, right, o) if in_left else (right, left, FLIPPED[o])
        bound = self.expr_quiet(other)
        start = self.expr_quiet(hdr.start).val if hdr.start is not None else var.val
        step = self.step_value(hdr)
        if bound.val is None or DATA in bound.deps or start is None or step is None or step <= 0:
            return None
        b = float(bound.val)

        def counter(k: int) -> float:
            if hdr.step_op == "+":
                return start + k * step
            if hdr.step_op == "-":
                return start - k * step
            if hdr.step_op == "*":
                return start * step**k
            return start * 2.0 ** (k * step) if hdr.step_op == "<<" else math.nan

        def holds(k: int) -> bool | None:
            try:
                j = counter(k)
            except OverflowError:
                return None
            if not math.isfinite(j):
                return None
            var.val, var.deps, var.rng = j, NOTHING, (j, j)
            self.cursor.scopes.append({})
            try:
                for d in guard.declarations if guard is not None else ():
                    self.computed_locals(d)
                v = self.expr_quiet(side)
            finally:
                self.cursor.scopes.pop()
            if v.val is None or DATA in v.deps:
                return None
            held = fold_binary(o, float(v.val), b, NOTHING)
            return None if held is None else bool(held) != (guard is not None)

        saved = var.val, var.deps, var.rng
        try:
            first = holds(0)
            if not first:
                return None if first is None else 0.0
            k = 1
            while True:  # the first k at which the test fails, doubling
                h = holds(k)
                if h is None or k > 2**40 or (hdr.step_op in ("*", "<<") and k > 64):
                    return None
                if not h:
                    break
                k *= 2
            lo, hi = k // 2, k
            while hi - lo > 1:
                mid = (lo + hi) // 2
                h = holds(mid)
                if h is None:
                    return None
                lo, hi = (mid, hi) if h else (lo, mid)
            return float(hi)
        finally:
            var.val, var.deps, var.rng = saved

    def computed_locals(self, declaration: Node) -> None:
        """The values of a declaration's locals (``const int t = p / n * m``), in the
        innermost scope, without booking their work: a loop's exit test reads them."""
        vt = self.type_of(text(declaration.child_by_field_name("type")))
        for d in declaration.children_by_field_name("declarator"):
            value = d.child_by_field_name("value") if d.type == "init_declarator" else None
            if value is not None:
                v = self.expr_quiet(value)
                self.cursor.scopes[-1][declared_name(d)] = Var(vt, v.deps, v.val)

    def count_exit(self, loop: Node, source: str) -> None:
        """A loop counted by its opening ``if (test) break;`` (after declarations,
        :func:`guarded_exit`): that statement is its test."""
        first = counted_exit(loop) if source != "default" else None
        guard = guarded_exit(loop) if source == "stepped to its test" and first is None else None
        first = guard.exit if guard is not None else first
        if first is not None:
            self.cursor.counted_exits.add(first.id)

    def default(self, base: float) -> float:
        """Trips assumed for a loop whose count is unknown: nested unknown loops get fewer
        (the work of a thread is bounded; 32 x 32 x 32 unknown trips would not be)."""
        k = self.cursor.unknown_depth
        return max(base / self.inputs.settings.nested_default**k, 2.0) if k else base

    def mark_loop_carried(self, body: Node | None, dim: str, skip: str | None) -> None:
        """Variables assigned in a loop body vary with the loop from its first iteration."""
        if body is None:
            return
        names = assigned_names(body) | macro_assigned_names(body, self.inputs.macros)
        if len(names) > 8:  # a deep nest: look up only the names in scope (each lookup walks
            names = names & self.names_in_scope()  # the scopes: cubic in the nesting depth)
        for name in names:
            if name == skip:
                continue
            v = self.var(name)
            if v is None:
                continue
            if v.buffer:
                if v.type.pointer:  # advanced in the loop (``in += w``): a new address a trip
                    v.deps = v.deps | {dim}
                elif not v.arrdims:  # a team-shared scalar (``__shared__ int x_top``) too
                    v.deps, v.val, v.rng = v.deps | {dim}, None, None
                continue
            v.deps = v.deps | {dim}
            v.val = None
            v.rng = None

    def loop_lines(self, node: Node) -> tuple[int, int]:
        """A loop's first and last line: a macro's use line for a loop it expands to."""
        if self.cursor.macro_line is not None:
            return self.cursor.macro_line, self.cursor.macro_line
        return node.start_point.row + 1, node.end_point.row + 1

    def new_loop_dim(self, trips_: float, source: str) -> str:
        """A thread dimension for a loop of ``trips_`` trips counted from ``source`` (a
        grid-stride loop's is recorded as such: not a per-thread stream)."""
        self.dimensions.loop_counter += 1
        dim = f"L{self.dimensions.loop_counter}"
        self.dimensions.dims[dim] = max(trips_, 1.0)
        if source in STRIDED:
            self.dimensions.strided_dims.add(dim)
        return dim

    def for_stmt(self, node: Node) -> None:
        self.set_line(node)
        unroll = self.cursor.pending_unroll
        if self.par.auto_loops and not self.cursor.loops and not self.par.pending_parallel:
            self.par.pending_parallel, self.par.pending_distribute = 1, True
        parallel = self.par.pending_parallel > 0
        self.cursor.pending_unroll = None
        collapse_left = self.par.pending_parallel - 1 if parallel else 0
        self.par.pending_parallel = 0
        distribute = self.par.pending_distribute and parallel
        teams_only = self.par.pending_teams_only and parallel
        self.par.pending_distribute = self.par.pending_teams_only = False
        self.cursor.scopes.append({})
        init = node.child_by_field_name("initializer")
        if init is not None:
            if init.type == "declaration":
                self.declaration(init)
            else:
                self.expr(init)
        hdr = loop_header(node)
        n, source, start_val = self.trip_count(hdr, node)
        self.count_exit(node, source)
        hinted = hinted_trips(node)
        if hinted is not None:
            n, source = hinted, "hint"
        if parallel and (source == "default" or n < 1) and self.par.parallel_default:
            if not teams_only and any(d in self.par.team_dims for d, _t, _p in self.cursor.loops):
                # a ``parallel for`` inside a loop distributed over the teams (generic mode):
                # the launch is sized to that loop, and a team's threads share this one, each
                # an unknown number of iterations
                n = self.par.team_threads * self.inputs.settings.capped_trips
                source = "default"
            else:
                units = self.par.teams if teams_only else self.par.parallel_default
                n = max(units / self.par.parallel_product, 1.0)
                source = "default" if self.par.parallel_assumed else "launch"
        var_name = hdr.var if hdr else None
        dim = self.new_loop_dim(n, source)
        descent = (
            None
            if parallel
            else self.descent_width(hdr, start_val, n, node.child_by_field_name("body"))
        )
        if descent is not None and source != "hint":
            self.dimensions.searches[dim] = (descent, n)
        if teams_only:
            self.par.team_dims.add(dim)
        unrolled = False
        if unroll is not None:
            unrolled = unroll == math.inf or (unroll >= n and source == "constant")
        elif source == "constant" and n <= self.inputs.settings.unroll_full_max and not parallel:
            unrolled = True
        names, data = self.unknown_bound(hdr, source)
        first, last = self.loop_lines(node)
        self.tally.loop_records.append(
            Loop(
                first,
                var_name,
                n,
                source,
                self.cursor.w,
                parallel,
                unrolled,
                last,
                names,
                data,
                self.cursor.line_base is not None,
                unrolled and unroll is not None,
                self.cursor.macro_line is not None,
            )
        )
        if unrolled:
            self.dimensions.unrolled_dims.add(dim)
        saved_lane = self.par.lane
        if parallel and collapse_left == 0:
            self.par.lane = dim  # consecutive iterations go to consecutive threads
        # the loop variable: depends on the loop dimension; mean value over the iterations
        if var_name:
            v = self.var(var_name)
            base_deps = v.deps if v is not None else NOTHING
            mean = None
            geo: tuple[float, float] | None = None
            if hdr is not None and start_val is not None and hdr.step_op in ("+", "-"):
                step = self.step_value(hdr)
                if step is not None:
                    sign = 1 if hdr.step_op == "+" else -1
                    mean = start_val + sign * step * max(n - 1, 0) / 2
            elif hdr is not None and start_val is not None and n >= 1 and source != "default":
                step = self.step_value(hdr)
                if step is not None and step > 0:
                    f = step if hdr.step_op in ("*", "/") else 2.0**step
                    if hdr.step_op in ("/", ">>"):
                        f = 1 / f
                    k = int(n)
                    vals = [start_val * f**i for i in range(min(k, 64))]
                    if vals:
                        mean = sum(vals) / len(vals)
                        geo = (min(vals), max(vals))
            vt = v.type if v is not None else INT
            rng = None
            if mean is not None and hdr is not None and hdr.step_op in ("+", "-"):
                step = self.step_value(hdr)
                if step is not None and start_val is not None:
                    end = start_val + (1 if hdr.step_op == "+" else -1) * step * max(n - 1, 0)
                    rng = (min(start_val, end), max(start_val, end))
                    sv = self.var(var_name)
                    if sv is not None and sv.rng is not None and base_deps:
                        rng = (
                            rng[0] + sv.rng[0] - (sv.val or 0),
                            rng[1] + sv.rng[1] - (sv.val or 0),
                        )
            if geo is not None and not base_deps:
                rng = geo
            counter = Var(vt, base_deps | {dim}, mean, rng=rng)
            if v is not None and v.buffer and vt.pointer:
                # a pointer run through a buffer (``for (p = a; p < a + n; ++p)``): its
                # elements stay the buffer's
                counter.space, counter.buffer = v.space, v.buffer
            if self.par.lane == dim:
                step = self.step_value(hdr) if hdr is not None else None
                if step is not None and hdr is not None and hdr.step_op in ("+", "-"):
                    counter.slope = step if hdr.step_op == "+" else -step
            elif v is not None:
                counter.slope = lane_slope(v, self.par.lane)
            self.declare(var_name, counter)
        saved = self.cursor.w
        saved_product, saved_tm = self.par.parallel_product, self.par.team_mult
        saved_thm = self.par.thread_mult
        self.cursor.loops.append((dim, n, parallel))
        self.cursor.loop_stores.append((dim, stored_buffers(node.child_by_field_name("body"))))
        self.cursor.w = saved * n
        saved_level = self.par.team_level
        if parallel:
            # a loop distributed over the teams alone runs its body once per team: what it
            # declares is the team's (``float tile[256]`` before an inner ``parallel for``)
            self.par.team_level = teams_only
            self.par.parallel_dims.append(dim)
            if distribute and self.par.team_mult > 1:
                # iterations are shared among the teams that all reached this loop
                self.cursor.w /= self.par.team_mult
                self.par.parallel_product /= self.par.team_mult
                self.par.team_mult = 1.0
            if not teams_only and self.par.thread_mult > 1:
                # ... and among the threads of the parallel region that all reached it
                self.cursor.w /= self.par.thread_mult
                self.par.parallel_product /= self.par.thread_mult
                self.par.thread_mult = 1.0
            self.par.parallel_product *= max(n, 1.0)
            self.par.max_parallel = max(self.par.max_parallel, self.par.parallel_product)
        self.cursor.seen.append(set())
        cond = node.child_by_field_name("condition")
        update = node.child_by_field_name("update")
        # loop control: the test and the increment run once per unrolled group of iterations
        # and on every trip of the remainder
        # (nvcc unrolls unknown-count loops by 4, small constant ones completely; clang
        # leaves a grid-stride loop rolled)
        if parallel:
            factor = 1.0
            self.add_int(self.inputs.settings.omp_iteration_ints)
            if collapse_left == 0:
                # the runtime folds each iteration's reduction variables into the team's
                # partial results: a shuffle tree over the warp per variable
                for t in self.par.reductions:
                    if t.is_float:
                        self.add_flop(t, costs.WARP_TREE)
                    else:
                        self.add_int(costs.WARP_TREE)
                    self.add_int(costs.WARP_TREE * costs.WARP_TREE_STEP_INTS)
        elif unrolled:
            factor = math.inf
        elif unroll is None and source in STRIDED and not self.inputs.settings.unroll_strided:
            factor = 1.0
        else:
            factor = max(unroll if unroll else self.inputs.settings.unroll_default, 1.0)
        saved_inner = self.cursor.w
        if parallel or unrolled:
            self.cursor.w = saved_inner / factor
        else:
            # clang splits off the remainder on each entry of a loop of a run-time count (not
            # of a constant one; nor is it charged to a loop of assumed trips: on dev those
            # rows moved away from the measured, 39 to 18)
            counted = source not in ("constant", "default")
            if self.inputs.settings.split_remainder and factor > 1 and counted:
                self.add_int(costs.REMAINDER_SETUP, saved)
            self.cursor.w = saved * control_passes(n, factor)
        if cond is not None:
            self.expr(cond)
        if update is not None:
            # the increment's cost; the loop variable keeps its per-iteration description
            lv = self.var(var_name) if var_name else None
            kept = (lv.deps, lv.val, lv.rng) if lv is not None else None
            self.expr(update)
            if lv is not None and kept is not None:
                lv.deps, lv.val, lv.rng = kept
        self.cursor.w = saved_inner
        body = node.child_by_field_name("body")
        if body is not None:
            if collapse_left > 0:
                inner = body
                if body.type == "compound_statement":
                    kids = [c for c in body.named_children if c.type != "comment"]
                    inner = kids[0] if len(kids) == 1 else body
                if inner.type == "for_statement":
                    self.par.pending_parallel = collapse_left
            unknown = source == "default"
            self.cursor.unknown_depth += unknown
            if update is not None:
                # a pointer the header steps (``for (float *p = a; p < a + n; ++p)``): each
                # trip reads through a new address
                self.mark_loop_carried(update, dim, var_name)
            for part in detached_body(node) or [body]:
                self.mark_loop_carried(part, dim, var_name)
                self.stmt(part)
            self.cursor.unknown_depth -= unknown
        self.cursor.seen.pop()
        self.cursor.loops.pop()
        self.cursor.loop_stores.pop()
        self.cursor.w = saved
        self.par.parallel_product, self.par.team_mult = saved_product, saved_tm
        self.par.team_level, self.par.thread_mult = saved_level, saved_thm
        self.par.lane = saved_lane
        self.cursor.scopes.pop()

    def step_value(self, hdr: LoopHeader) -> float | None:
        if hdr.step is None:
            return 1.0
        v = self.expr_quiet(hdr.step)
        return v.val

    def pointer_offsets(self, start: Node, bound: Node) -> tuple[Val, Val] | None:
        """The offsets from one pointer ``start`` and ``bound`` are taken from (``a + s``
        and ``a + e``, or ``a`` for 0): their values, else None when they are not both a
        pointer name plus (or without) an offset."""
        first, last = _pointer_base(start), _pointer_base(bound)
        if first is None or last is None or first[0] != last[0]:
            return None
        base = self.var(first[0])
        if base is None or not base.type.pointer:
            return None
        zero = Val(INT, NOTHING, 0.0)
        s = self.expr_quiet(first[1]) if first[1] is not None else zero
        e = self.expr_quiet(last[1]) if last[1] is not None else zero
        return s, e

    def trip_count(
        self, hdr: LoopHeader | None, loop: Node | None = None
    ) -> tuple[float, str, float | None]:
        """Trips per execution of the loop, where the number came from, and the start's
        (mean) value."""
        if hdr is not None and hdr.bound is None and loop is not None:
            stepped = self.stepped_trips(hdr, loop)
            if stepped is not None:
                return stepped, "stepped to its test", None
        guard = guarded_exit(loop) if hdr is None and loop is not None else None
        if guard is not None and loop is not None:
            counter = LoopHeader(guard.var, guard.start, None, "<", guard.step, guard.step_op)
            stepped = self.stepped_trips(counter, loop, guard)
            if stepped is not None:
                return stepped, "stepped to its test", None
        if hdr is None or hdr.bound is None and hdr.step_op not in (">>", "/", "-"):
            return self.default(self.inputs.settings.default_trips), "default", None
        start = self.var(hdr.var) if hdr.var else None
        sv: float | None = None
        sdeps: frozenset[str] = NOTHING
        if hdr.start is not None:
            sval = self.expr_quiet(hdr.start)
            sv, sdeps = sval.val, sval.deps
        elif start is not None:
            sv, sdeps = start.val, start.deps
        bound = self.expr_quiet(hdr.bound) if hdr.bound is not None else Val(INT, NOTHING, 0.0)
        if (sv is None or bound.val is None) and hdr.start is not None and hdr.bound is not None:
            # a pointer run from one address of a buffer to another (``p = a + s; p < a +
            # e``): the trips are the offsets' (s to e)
            offsets = self.pointer_offsets(hdr.start, hdr.bound)
            if offsets is not None:
                offset, bound = offsets
                sv, sdeps = offset.val, offset.deps
        step = self.expr_quiet(hdr.step) if hdr.step is not None else Val(INT, NOTHING, 1.0)
        if hdr.closing is not None and step.val is not None:
            # i < j with i++, j--: the gap between the counters closes by both steps
            other = self.expr_quiet(hdr.closing)
            total = None if other.val is None else step.val + other.val
            step = Val(step.type, step.deps | other.deps, total)
        if (DATA in bound.deps or DATA in sdeps) and loop is not None:
            average = self.row_average(hdr, loop)
            if average is not None:
                return average, "average over the rows", sv
        if sv is None or bound.val is None or step.val is None:
            if loop is not None and DATA not in bound.deps | sdeps | step.deps:
                mean = sampled_trips(hdr, loop, self.expr_quiet)
                if mean is not None:
                    return min(mean, 1e9), "mean over the threads", sv
            assumed = self.default(self.inputs.settings.default_trips)
            cap = None if sdeps else self.capped_trips(hdr, sv, step.val)
            return (assumed if cap is None else float(min(assumed, cap))), "default", sv
        if DATA in bound.deps or DATA in step.deps or DATA in sdeps:
            return self.default(self.inputs.settings.default_trips), "default", sv
        varying = bool(sdeps or bound.deps or step.deps)
        thread_start = any(d in THREAD_DIMS or d in self.par.parallel_dims for d in sdeps)
        strided = thread_start and hdr.step_op == "+"
        # strided by the thread count (grid-/block-stride) or per-thread ranges: from the
        # mean start, half a step more is the mean count over threads (a thread runs
        # ceil((bound - start) / step) trips). Against a fixed bound that holds also when
        # fewer elements than threads leave some threads none (2,048 blocks over 4 M
        # threads: 0.0005 trips, not 0.5); a bound that varies (``k < j - 3``, j per block)
        # is spread around its mean, so at least half a trip is kept
        fixed = strided and not bound.deps
        first = sv - 0.5 * step.val if fixed else sv
        n = trips(first, bound.val, hdr.bound_op, step.val, hdr.step_op, exact=not varying)
        if n is None:
            return self.default(self.inputs.settings.default_trips), "default", sv
        if hdr.pre_step:  # the first test already sees the stepped value
            n = max(n - 1.0, 0.0)
        if strided:
            if not fixed:
                n += 0.5
            source = "grid-stride" if step.val > 1 else "thread range"
        else:
            source = self.value_source(hdr)
        if n > 1e9:
            n = 1e9
        return n, source, sv

    def capped_trips(
        self, hdr: LoopHeader, start: float | None, step: float | None
    ) -> float | None:
        """The most trips a loop counting up to a ``min`` can run when only some of its
        arguments are known (``j < min(8, n)``: at most 8), else None. The default assumed
        for the unknown count is kept below that."""
        if start is None or step is None or hdr.step_op != "+" or hdr.bound is None:
            return None
        if hdr.bound_op not in ("<", "<="):
            return None
        b = unparenthesized(hdr.bound)
        fn = b.child_by_field_name("function") if b.type == "call_expression" else None
        args = b.child_by_field_name("arguments")
        if fn is None or args is None or text(fn).rsplit("::", 1)[-1] not in _MIN_CALLS:
            return None
        known = [
            v.val
            for a in args.named_children
            if (v := self.expr_quiet(a)).val is not None and DATA not in v.deps
        ]
        if not known:
            return None
        return trips(start, min(known), hdr.bound_op, step, "+")

    def row_average(self, hdr: LoopHeader, loop: Node) -> float | None:
        """A loop over one row of a compressed layout (``row_ranges.py``): the items over
        the rows, from the lengths the host gave the arrays."""
        rows = row_range(hdr, loop)
        if rows is None:
            return None

        def length(array: Node) -> float | None:
            buffer = self.expr_quiet(array).buffer
            n = self.inputs.extents.get(buffer) if buffer else None
            return n if n is not None and math.isfinite(n) and n > 0 else None

        offsets = length(rows.offsets)
        items = [n for a in rows.items if (n := length(a))]
        if offsets is None or offsets < 2 or not items:
            return None
        return max(items) / (offsets - 1)

    def unknown_bound(self, hdr: LoopHeader | None, source: str) -> tuple[tuple[str, ...], bool]:
        """Why a loop's trip count is a default: the kernel parameters and host names without
        a value that its start, bound and step use (a hint can give them), and whether they
        depend on loaded data (no hint can)."""
        if source != "default" or hdr is None:
            return (), False
        names: list[str] = []
        data = False
        for part in (hdr.start, hdr.bound, hdr.step):
            if part is None:
                continue
            data = data or (DATA in self.expr_quiet(part).deps and not self.template_bound(part))
            for nm in identifiers(part):
                if nm in names or nm in self.inputs.constants or nm in self.inputs.aliases:
                    continue
                v = self.var(nm)
                if v is None:
                    if self.inputs.lookup_host(nm) is None and nm not in self.inputs.macros:
                        names.append(nm)
                elif (
                    (self.cursor.scopes[0].get(nm) is v or self.inputs.globals.get(nm) is v)
                    and v.val is None
                    and v.buffer is None
                    and not v.deps
                    and v.type.kind != "unknown"
                    and not v.type.pointer
                ):
                    names.append(nm)  # a parameter (host variable) nothing gives a value
        return tuple(names), data

    def template_bound(self, part: Node) -> bool:
        """``part``'s unknown values are all template parameters nothing gave (``d < dim``
        in ``template <int dim>``), with no load or call: a hint settles it."""
        unknown = [
            nm
            for nm in identifiers(part)
            if (v := self.var(nm)) is None
            and self.inputs.lookup_host(nm) is None
            and nm not in self.inputs.macros
            or v is not None
            and DATA in v.deps
        ]
        return (
            bool(unknown)
            and all(nm in self.inputs.template_names for nm in unknown)
            and not _loads(part)
        )

    def value_source(self, hdr: LoopHeader) -> str:
        words = set(re.findall(r"[A-Za-z_]\w*", text(hdr.bound) + " " + text(hdr.start)))
        if words & {"blockDim", "gridDim", "this_thread_block", "this_grid", "warpSize"}:
            return "launch"
        # the values the bound and start read, not the names of their members or functions
        # (``tile.size()`` is no host variable ``size``), in a fixed order
        parts = [p for p in (hdr.bound, hdr.start) if p is not None]
        for nm in dict.fromkeys(nm for p in parts for nm in identifiers(p, objects=True)):
            if nm in self.inputs.constants or nm in self.inputs.aliases:
                continue
            if nm in self.inputs.template_names:
                continue  # ``template <int TM>``: a compile-time constant (unrolled, registers)
            v = self.var(nm)
            if v is not None and v.group is not None:
                # a cooperative group's size: a tile's (at most a warp) is a template
                # argument the compiler knows; a block's or grid's comes with the launch
                return "constant" if v.group <= WARP else "launch"
            if v is not None or self.inputs.lookup_host(nm) is not None:
                return "argument"
        return "constant"


_LOOP_TYPES = frozenset({"for_statement", "while_statement", "do_statement", "for_range_loop"})
# the calls whose value is at most each of their arguments
_MIN_CALLS = frozenset({"min", "umin", "llmin", "ullmin", "fminf", "fmin"})


def hinted_trips(loop: Node) -> float | None:
    """The trip count a ``// roofline: trips=64`` comment gives ``loop``: on the loop's first
    line (after its header or first in its body) or on the lines just above it (through
    other comments and pragmas such as ``#pragma unroll``)."""
    for c in _comments_at(loop):
        raw = loop_trips_hint(text(c))
        if raw is not None:
            v = evaluate(raw)
            if v is not None and math.isfinite(v) and v >= 0:
                return min(v, 1e9)
    return None


def _comments_at(loop: Node) -> list[Node]:
    out: list[Node] = []
    row = loop.start_point.row
    prev = loop.prev_sibling
    while prev is not None and prev.type in ("comment", "preproc_call"):
        if prev.end_point.row < row - 1:
            break
        if prev.type == "comment":
            out.append(prev)
        row = prev.start_point.row
        prev = prev.prev_sibling
    body = loop.child_by_field_name("body")
    first = loop.start_point.row
    for part in (loop, body):
        if part is None:
            continue
        for c in part.children:
            if c.start_point.row > first:
                break
            if c.type == "comment":
                out.append(c)
    return out


def _loads(node: Node) -> bool:
    """``node`` reads memory (``syntax.expr.reads_memory``) or calls a function somewhere in
    it (``n[i] - 1``, ``*p``, ``s->n``, ``f(x)``)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "call_expression" or reads_memory(n):
            return True
        stack.extend(n.named_children)
    return False


def _steered(body: Node) -> bool:
    """Whether a loop body sets a variable on what it reads from memory: assigned in a
    branch whose condition reads (``if (z >= a[r]) idx = r;``) or from a selection on it
    (``lo = a[m] < v ? m + 1 : lo``)."""
    stack = [body]
    while stack:
        n = stack.pop()
        test: Node | None = None
        if n.type == "if_statement" or (
            n.type == "conditional_expression"
            and n.parent is not None
            and n.parent.type == "assignment_expression"
        ):
            test = n.child_by_field_name("condition")
        if test is not None and _loads(test):
            branches = n.named_children if n.type == "if_statement" else [n.parent]
            for b in branches:
                if b is not None and b != test and _sets_variable(b):
                    return True
        stack.extend(n.named_children)
    return False


def _sets_variable(node: Node) -> bool:
    """``node`` assigns a plain variable (not an element or a field) somewhere in it."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "assignment_expression":
            left = n.child_by_field_name("left")
            if left is not None and left.type == "identifier":
                return True
        stack.extend(n.named_children)
    return False


def _compact(node: Node) -> str:
    """An expression's text without spaces or a cast's type (``(int)``, ``(size_t)``)."""
    return re.sub(r"\((?:unsigned |const )?[A-Za-z_]\w*\)(?=[\w(])|\s+", "", text(node))


def _assigned_values(body: Node) -> list[Node]:
    """The values assigned (``x = v``) or initialising a declaration (``int x = v``) in a
    loop body, outside the loops nested in it."""
    out: list[Node] = []
    stack = [body]
    while stack:
        n = stack.pop()
        if n.type == "assignment_expression":
            op = n.child_by_field_name("operator")
            right = n.child_by_field_name("right")
            if right is not None and (op is None or op.type == "="):
                out.append(right)
        elif n.type == "init_declarator":
            value = n.child_by_field_name("value")
            if value is not None:
                out.append(value)
        if n is body or n.type not in _LOOP_TYPES:
            stack.extend(n.named_children)
    return out


def assigned_names(body: Node) -> frozenset[str]:
    """Variables assigned anywhere in ``body`` (loop-carried values of a loop body)."""
    return _scan_body(body).assigned


def stored_buffers(body: Node | None) -> frozenset[str]:
    """The buffers ``body`` stores elements of (``x[i] = x[i] * a``: what it loads from them
    changes from one trip to the next)."""
    return _scan_body(body).stored if body is not None else frozenset()


@dataclass(frozen=True)
class _BodyScan:
    assigned: frozenset[str]
    stored: frozenset[str]  # buffers stored to through an element or a pointer (``x[i] = ...``)
    heads: frozenset[str]  # names called, or starting a statement: the macros it may use


_SCAN_CACHE: dict[tuple[int, int, bytes], _BodyScan] = {}
_ELEMENT_TARGETS = ("subscript_expression", "pointer_expression")


def _scan_body(body: Node) -> _BodyScan:
    """What :func:`assigned_names` and :func:`stored_buffers` read from ``body``, in one walk.

    Cached by the body's bytes, and the bodies of the loops inside are scanned (and cached)
    once, not walked again for every enclosing loop: linear in a nest's size, where walking
    each loop's whole body was quadratic in its depth."""
    key = (body.start_byte, body.end_byte, hashlib.blake2b(body.text or b"").digest())
    hit = _SCAN_CACHE.get(key)
    if hit is not None:
        return hit
    assigned: set[str] = set()
    stored: set[str] = set()
    heads: set[str] = set()
    stack = [body]
    while stack:
        n = stack.pop()
        t = n.type
        if t in ("call_expression", "expression_statement", "ERROR", "declaration"):
            first = n.child(0) if n.child_count else None  # (an ERROR of stray bytes has none)
            if first is not None and first.type in ("identifier", "type_identifier"):
                heads.add(text(first))
        if t in ("assignment_expression", "update_expression"):
            target = n.child_by_field_name("left" if t == "assignment_expression" else "argument")
            if target is not None and target.type == "identifier":
                assigned.add(text(target))
            elif target is not None and target.type in _ELEMENT_TARGETS:
                root = root_identifier(target)
                if root:
                    stored.add(root)
        if t in _LOOP_TYPES and n is not body:
            inner = n.child_by_field_name("body")
            if inner is not None:
                nested = _scan_body(inner)
                assigned |= nested.assigned
                stored |= nested.stored
                heads |= nested.heads
                stack.extend(c for c in n.named_children if c != inner)
                continue
        if t not in ("number_literal", "string_literal", "comment", "identifier"):
            stack.extend(n.named_children)
    result = _BodyScan(frozenset(assigned), frozenset(stored), frozenset(heads))
    if len(_SCAN_CACHE) > 20000:
        _SCAN_CACHE.clear()
    _SCAN_CACHE[key] = result
    return result


# ``x = ...``, ``x += ...``, ``x++``, ``--x`` in a macro's body text
_ASSIGNS = re.compile(
    r"(?<![\w.>])([A-Za-z_]\w*)\s*(?:(?:[-+*/%&|^]|<<|>>)?=(?!=)|\+\+|--)|(?:\+\+|--)\s*([A-Za-z_]\w*)"
)


def macro_assigned_names(
    body: Node, macros: dict[str, tuple[tuple[str, ...] | None, str]]
) -> frozenset[str]:
    """Variables that the macros used in ``body`` assign: ``STEP(v, a[k])`` with ``#define
    STEP(v, k) v = v * 0.5f + k`` assigns ``v``, ``MAD16`` with ``#define MAD x = x * y +
    z;`` nested in it assigns ``x`` (the names assigned in the body's full expansion)."""
    if not _scan_body(body).heads & macros.keys():
        return frozenset()
    raw = body.text or b""
    key = (hashlib.blake2b(raw).digest(), id(macros))
    hit = _MACRO_ASSIGNS.get(key)
    if hit is not None:
        return hit
    src = raw.decode("utf-8", "replace")
    full = expand_text(src, macros)
    found = frozenset(m.group(1) or m.group(2) for m in _ASSIGNS.finditer(full or ""))
    if len(_MACRO_ASSIGNS) > 20000:
        _MACRO_ASSIGNS.clear()
    _MACRO_ASSIGNS[key] = found
    return found


_MACRO_ASSIGNS: dict[tuple[bytes, int], frozenset[str]] = {}


def _operator(node: Node) -> str:
    op = node.child_by_field_name("operator")
    return op.type if op is not None else ""


def _pointer_base(node: Node) -> tuple[str, Node | None] | None:
    """``a`` and the offset of ``a + off`` (or ``off + a``), ``a`` and None of ``a``; None for
    anything else."""
    node = unparenthesized(node)
    if node.type == "identifier":
        return text(node), None
    op = node.child_by_field_name("operator") if node.type == "binary_expression" else None
    if op is None or op.type != "+":
        return None
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    if left is None or right is None:
        return None
    left, right = unparenthesized(left), unparenthesized(right)
    if left.type == "identifier":
        return text(left), right
    if right.type == "identifier":
        return text(right), left
    return None
