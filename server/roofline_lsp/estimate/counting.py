"""Per-thread operation and memory-access counting on the tree-sitter AST.

The counter walks a kernel body (CUDA: per thread; OpenMP/OpenACC: the whole region, divided by
the iterations of its parallel loops at the end) with a *weight*: how many times the current
statement runs per thread. Loops multiply the weight by their trip count, branches by their
probability, early ``return``/``continue`` scale what follows. Each statement's cost is booked
under its source line (``ThreadCounts.lines`` / ``weights``), so per-line costs from another
source (compiler output) can replace the source-level ones later.

Values are tracked just enough to count well: a variable's type (precision), the *dimensions*
it depends on (thread/block indices, loop iterations, loaded data) and its value (exact, or
the mean over threads for thread-dependent values), which give trip counts, branch
probabilities, loop-invariant hoisting and how many distinct elements each memory access
touches across the launch (``Access.distinct``) for the memory model.

Device functions and ``declare target`` functions are inlined (with their pointer arguments
bound to the caller's buffers), function-like and expression macros expanded and parsed.

The walker is split by concern (``walk_state``: state and bookkeeping; ``walk_branches``,
``walk_references``, ``walk_expressions``, ``walk_groups``, ``walk_calls``, ``walk_loops``,
``walk_statements``); :class:`ThreadCounter` is the complete walker and builds the result.
"""

from __future__ import annotations

from dataclasses import replace

from roofline_lsp.estimate.thread_counts import Access, ThreadCounts
from roofline_lsp.estimate.value_domain import THREAD_DIMS
from roofline_lsp.estimate.walk_statements import StatementWalker


class ThreadCounter(StatementWalker):
    """Walk one kernel and produce its :class:`ThreadCounts`."""

    def result(self, threads: float, scale: float = 1.0) -> ThreadCounts:
        """Counts per thread: everything divided by ``scale`` (OpenMP: the parallel
        iterations of the region)."""
        inv = 1.0 / scale if scale > 0 else 1.0
        accesses = tuple(
            Access(
                r.buffer,
                r.space,
                r.elem,
                r.kind,
                r.weight * inv,
                r.distinct,
                r.line,
                r.index,
                r.interval,
                r.unfollowed,
                r.gathered,
                r.lane_stride,
                r.streamed,
                r.offset,
                r.run,
                r.searched,
                r.sharers,
                r.guessed * inv,
                r.combined,
                r.center,
                r.lane_bytes,
            )
            for r in self.tally.accesses.values()
            if r.space != "localmem" or r.buffer.removeprefix("local:") in self.tally.local_dynamic
        )
        lines = {
            ln: (r[0] * inv, r[1] * inv, r[2] * inv, r[3] * inv)
            for ln, r in self.tally.lines.items()
        }
        return ThreadCounts(
            flops={
                "fp64": self.tally.ops[0] * inv,
                "fp32": self.tally.ops[1] * inv,
                "fp16": self.tally.ops[2] * inv,
                **({"tensor": self.tally.tensor * inv} if self.tally.tensor else {}),
            },
            int_ops=self.tally.ops[3] * inv,
            accesses=accesses,
            loops=tuple(replace(lp, weight=lp.weight * inv) for lp in self.tally.loop_records),
            lines=lines,
            weights={ln: w * inv for ln, w in self.tally.weights.items()},
            threads=threads,
            dims={
                d: e
                for d, e in self.dimensions.dims.items()
                if d in THREAD_DIMS or d in self.par.parallel_dims
            },
            followed=tuple(self.tally.followed),
            per="iteration" if self.inputs.offload else "thread",
            local_bytes={"local:" + k: v for k, v in self.tally.local_sizes.items()},
            dead_lines=dict(self.tally.dead_lines),
            truncated_at=self.tally.truncated_at,
            tensor_kind=self.tally.tensor_kind,
        )
