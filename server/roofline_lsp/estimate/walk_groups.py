"""Cooperative groups in the counter: the sizes and ranks of ``thread_block``,
``thread_block_tile<N>`` / ``tiled_partition<N>(...)``, ``tiled_partition(parent, n)``,
``grid_group`` and ``coalesced_group`` objects, so that ``tile.size()``, ``warp.size()``,
``block.size()`` or ``g.thread_rank()`` in a loop bound give the trip count the launch implies
instead of the unknown-bound default.

A group's size is tracked on the value (``Val.group``/``Var.group``) from the call that makes
it, from the declared type (``thread_block_tile<32> t = ...``, a device function's parameter)
or from the variable passed; a ``coalesced_group`` counts as a full warp (its upper bound).
"""

from __future__ import annotations

import re

from tree_sitter import Node

from roofline_lsp.estimate.value_domain import NOTHING, Val, Var
from roofline_lsp.estimate.walk_expressions import ExpressionWalker
from roofline_lsp.syntax.datatypes import INT, UNKNOWN
from roofline_lsp.syntax.expr import text

WARP = 32.0
_TILE_TYPE = re.compile(r"\bthread_block_tile\s*<\s*([^,>]+)")
_SIZE_METHODS = frozenset({"size", "num_threads"})
_RANK_METHODS = frozenset({"thread_rank"})
_BLOCK_BUILTINS = {
    "group_index": "blockIdx",
    "thread_index": "threadIdx",
    "dim_threads": "blockDim",
    "group_dim": "blockDim",
}
_GRID_BUILTINS = {"block_index": "blockIdx", "dim_blocks": "gridDim"}


class GroupWalker(ExpressionWalker):
    """Cooperative-groups objects: their size and the calling thread's rank."""

    def group_threads(self, kind: str) -> float:
        """Threads of a ``"block"``, a ``"grid"`` or a ``"warp"``."""
        b = self.inputs.block
        if kind == "block":
            return float(b[0] * b[1] * b[2])
        if kind == "grid":
            g = self.inputs.grid
            return float(b[0] * b[1] * b[2] * g[0] * g[1] * g[2])
        return WARP

    def group_of_type(self, type_text: str) -> float | None:
        """The size a declared group type implies (``thread_block_tile<16>`` -> 16)."""
        m = _TILE_TYPE.search(type_text)
        if m is not None:
            return self.constant_of(m.group(1).strip())
        short = re.sub(r"\s+|const|&", "", type_text).rsplit("::", 1)[-1]
        if short == "thread_block":
            return self.group_threads("block")
        if short == "grid_group":
            return self.group_threads("grid")
        if short == "coalesced_group":
            return WARP
        return None

    def constant_of(self, s: str) -> float | None:
        try:
            return float(int(s, 0))
        except ValueError:
            v = self.value_of(s)
            return v if v is not None and v > 0 else None

    def group_of(self, node: Node) -> float | None:
        """The size of the group an expression denotes (None: not a group we know)."""
        while node.type == "parenthesized_expression" and node.named_children:
            node = node.named_children[0]
        if node.type in ("identifier", "qualified_identifier"):
            v = self.var(text(node).rsplit("::", 1)[-1])
            return v.group if v is not None else None
        if node.type == "call_expression":
            fn = node.child_by_field_name("function")
            if fn is None or fn.type == "field_expression":
                return None
            return self.group_made(fn, self.call_args(node))
        return None

    def call_args(self, node: Node) -> list[Node]:
        a = node.child_by_field_name("arguments")
        return [c for c in (a.named_children if a else []) if c.type != "comment"]

    def group_made(self, fn: Node, args: list[Node]) -> float | None:
        """The size of the group a factory call makes (``this_thread_block()``,
        ``tiled_partition<32>(block)``, ``tiled_partition(block, 4)``, ``this_grid()``,
        ``coalesced_threads()``); None for any other call."""
        while fn.type == "qualified_identifier":
            inner = fn.child_by_field_name("name")
            if inner is None:
                break
            fn = inner
        name_node = fn.child_by_field_name("name") if fn.type == "template_function" else fn
        short = text(name_node).rsplit("::", 1)[-1].strip()
        if short == "this_thread_block":
            return self.group_threads("block")
        if short == "this_grid":
            return self.group_threads("grid")
        if short == "coalesced_threads":
            return WARP
        if short == "tiled_partition":
            if fn.type == "template_function":
                targs = fn.child_by_field_name("arguments")
                return self.constant_of(text(targs).strip("<> ")) if targs is not None else None
            if len(args) >= 2:
                v = self.expr_quiet(args[1])
                return v.val if v.val is not None and v.val > 0 and not v.deps else None
        return None

    def group_call(self, fn: Node | None, short: str, args: list[Node]) -> Val | None:
        """A call on or making a cooperative group, valued; None when it is not one."""
        if fn is None:
            return None
        if fn.type != "field_expression":
            g = self.group_made(fn, args)
            if g is None:
                return None
            for a in args:
                self.expr(a)
            return Val(UNKNOWN, NOTHING, group=g)
        obj = fn.child_by_field_name("argument")
        g = self.group_of(obj) if obj is not None else None
        if g is None:
            return None
        if short in _SIZE_METHODS:
            return Val(INT, NOTHING, g)
        if short in _RANK_METHODS:
            return self.rank_in(g)
        if short == "meta_group_size":
            return Val(INT, NOTHING, max(self.group_threads("block") / g, 1.0))
        if short == "meta_group_rank":
            return self.tile_index(g)
        if short == "sync" or short.startswith("shfl"):
            # a barrier, a register exchange: free, as __syncthreads and __shfl_* are
            vals = [self.expr(a) for a in args]
            deps = NOTHING
            for v in vals:
                deps = deps | v.deps
            return Val(vals[0].type if vals else UNKNOWN, deps)
        return None

    def field(self, node: Node, kind: str) -> Val:
        """``block.group_index().x`` is ``blockIdx.x`` (:meth:`group_builtin`)."""
        arg = node.child_by_field_name("argument")
        if arg is not None and arg.type == "call_expression":
            an = self.group_builtin(arg)
            if an is not None:
                return self.builtin(an, text(node.child_by_field_name("field")))
        return super().field(node, kind)

    def group_builtin(self, call: Node) -> str | None:
        """The built-in a group's coordinate call stands for (``block.group_index()``:
        ``blockIdx``, ``thread_index()``: ``threadIdx``, ``dim_threads()``/``group_dim()``:
        ``blockDim``; a grid's ``block_index()``: ``blockIdx``, ``dim_blocks()``:
        ``gridDim``), or None."""
        fn = call.child_by_field_name("function")
        if fn is None or fn.type != "field_expression":
            return None
        obj = fn.child_by_field_name("argument")
        g = self.group_of(obj) if obj is not None else None
        if g is None:
            return None
        name = text(fn.child_by_field_name("field"))
        if g == self.group_threads("block"):
            return _BLOCK_BUILTINS.get(name)
        if g == self.group_threads("grid"):
            return _GRID_BUILTINS.get(name)
        return None

    def rank_in(self, g: float) -> Val:
        """``thread_rank()`` of a group of ``g`` threads: the thread's index in it (a tile of
        a block: threadIdx.x modulo the tile; a block or grid: the linear index)."""
        if g <= 1:
            return Val(INT, NOTHING, 0.0)
        b = self.inputs.block
        deps = frozenset(
            d
            for d, n in (("tx", b[0]), ("ty", b[1]), ("tz", b[2]))
            if n > 1 and (g > b[0] or d == "tx")
        )
        if g > self.group_threads("block"):
            gr = self.inputs.grid
            deps |= frozenset(d for d, n in (("bx", gr[0]), ("by", gr[1]), ("bz", gr[2])) if n > 1)
        return Val(INT, deps or frozenset({"tx"}), (g - 1) / 2, rng=(0.0, g - 1))

    def tile_index(self, g: float) -> Val:
        """``meta_group_rank()`` of a tile of ``g`` threads: its index among the block's
        tiles (the thread's linear index in the block divided by ``g``)."""
        n = max(self.group_threads("block") / g, 1.0)
        if n <= 1:
            return Val(INT, NOTHING, 0.0)
        b = self.inputs.block
        dims = (("tx", b[0]), ("ty", b[1]), ("tz", b[2]))
        deps = frozenset(d for d, k in dims if k > 1 and (d != "tx" or k > g))
        return Val(INT, deps or frozenset({"ty"}), (n - 1) / 2, rng=(0.0, n - 1))

    def bind_groups(self, params: list[tuple[str, str]], args: list[Node], vals: list[Val],
                    scope: dict[str, Var]) -> None:  # fmt: skip
        """A device function's group parameters: the size from the declared type, else
        from the argument passed."""
        for i, (ptype, pname) in enumerate(params):
            v = scope.get(pname)
            if v is None:
                continue
            g = self.group_of_type(ptype)
            if g is None and i < len(vals):
                g = vals[i].group
                if g is None and i < len(args):
                    g = self.group_of(args[i])
            if g is not None:
                v.group = g
