"""Fuzz `roofline-lsp serve` over stdio: random incremental edits with requests in between.

A raw JSON-RPC client (no library between it and the pipe, so it can also send what a library
would refuse) opens a few documents, applies random incremental edits to them (tokens such
as ``#pragma acc parallel loop``, ``#if``, ``<<<``, ``#include "``, whole kernels, deletions,
now and then a 100-200 kB single line), closes and re-opens them every few thousand edits,
and interleaves hover, inlay-hint, code-lens, code-action and ``roofline.explainKernel``
requests, plus requests with wrongly typed params (which must be answered with an error).

It prints, every ``--every`` edits, the edits/s so far, the server's RSS and the worst
request latency; at the end a summary: edits, edits/s, worst and p99 latency, RSS after the
first 2,000 edits and its largest growth after, crashes (the server died), hangs (a request
unanswered for ``--hang-s`` seconds), tracebacks on stderr, unexpected answers, exit code.
The exit status is 1 when there was a crash, a hang, a traceback or a wrong answer.

    python benchmarks/fuzz_lsp.py [--edits 100000] [--seed 1] [--counts source] [--json]

The end-to-end test suite runs a short seeded run of it (``tests/e2e/test_fuzz.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "server"))
from roofline_lsp.lsp.framing import frame, read_frame  # noqa: E402

FIXTURES = REPO / "tests" / "fixtures" / "lsp"
SERVER = [sys.executable, "-m", "roofline_lsp", "serve"]

TOKENS = (
    "#pragma acc parallel loop\n",
    "#pragma omp target teams distribute parallel for\n",
    "#if ",
    "#if 0\n",
    "#endif\n",
    "#else\n",
    "#define N 1024\n",
    '#include "',
    "#include <cuda.h>\n",
    "<<<",
    ">>>",
    "k<<<n / 256, 256>>>(a, b, n);",
    "__global__ ",
    "__device__ ",
    "for (int i = 0; i < n; i++) ",
    "a[i] = b[i] * 2.0f + c;",
    "double x = sqrt(y);",
    "__syncthreads();",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ";",
    '"',
    "'",
    "/*",
    "*/",
    "//",
    "\\\n",
    "\n",
    " ",
    "x",
    "é",
    "∑",
    "\t",
)
KERNEL = (
    "\n__global__ void fz{n}(float *a, const float *b, int n) {{\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) a[i] = b[i] * b[i] + 1.0f;\n}}\n"
)
# (method, params, what the answer must be) for requests a client gets wrong
BAD_REQUESTS: tuple[tuple[str, Any], ...] = (
    (
        "textDocument/hover",
        {"textDocument": {"uri": "{uri}"}, "position": {"line": "a", "character": 0}},
    ),
    (
        "textDocument/hover",
        {"textDocument": {"uri": "{uri}"}, "position": {"line": -1, "character": -5}},
    ),
    (
        "textDocument/hover",
        {"textDocument": {"uri": "{uri}"}, "position": {"line": 1.5, "character": 0}},
    ),
    (
        "textDocument/hover",
        {"textDocument": {"uri": "{uri}"}, "position": {"line": 2**64, "character": 0}},
    ),
    ("textDocument/hover", [1, 2]),
    ("textDocument/hover", None),
    ("textDocument/inlayHint", {"textDocument": {"uri": "{uri}"}, "range": None}),
    ("textDocument/codeLens", {"textDocument": None}),
    (
        "textDocument/codeAction",
        {
            "textDocument": {"uri": "{uri}"},
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
            "context": "x",
        },
    ),
)


@dataclass
class Doc:
    uri: str
    original: str
    text: str
    version: int = 1
    open: bool = False
    opened_at: int = 0  # edit count when opened
    reopen_after: int = 0


@dataclass
class Stats:
    edits: int = 0
    requests: int = 0
    answered: int = 0
    worst_s: float = 0.0
    worst_method: str = ""
    latencies: list[float] = field(default_factory=list)
    hangs: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)
    rss: list[tuple[int, float]] = field(default_factory=list)  # (edits, MB)
    huge_lines: int = 0
    startup_s: float = 0.0
    reopens: int = 0


class Client:
    """A raw LSP client over a server's stdio: framing, ids, answers to server requests."""

    def __init__(self, cmd: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        self.next_id = 0
        self.lock = threading.Lock()
        self.pending: dict[int, tuple[float, str, bool]] = {}  # id -> (sent, method, bad)
        self.answers: queue.Queue[tuple[int, float, dict[str, Any]]] = queue.Queue()
        self.stderr: list[str] = []
        self.tracebacks = 0
        self.traceback_texts: list[list[str]] = []  # the first few, whole
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip()
            if "Traceback" in line:
                self.tracebacks += 1
                if len(self.traceback_texts) < 5:
                    self.traceback_texts.append([])
            elif self.traceback_texts and len(self.traceback_texts[-1]) < 60:
                tb = self.traceback_texts[-1]
                if not tb or tb[-1].startswith(" ") or line.startswith(" "):
                    tb.append(line)
            if len(self.stderr) < 2000:
                self.stderr.append(line)

    def _read_stdout(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            body = read_frame(out)
            if body is None:
                return
            msg = json.loads(body)
            if "method" in msg and "id" in msg:  # a request of the server's: answer null
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
            elif "id" in msg and "method" not in msg:
                self.answers.put((msg["id"], time.monotonic(), msg))

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        with self.lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def send(self, msg: dict[str, Any]) -> None:
        self.send_raw(frame(json.dumps(msg).encode("utf-8")))

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Any, bad: bool = False) -> int:
        self.next_id += 1
        rid = self.next_id
        self.pending[rid] = (time.monotonic(), method, bad)
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return rid


def utf16_len(s: str) -> int:
    return len(s.encode("utf-16-le")) // 2


def position(text: str, index: int) -> dict[str, int]:
    """The LSP (UTF-16) position of string index ``index`` of ``text``."""
    line = text.count("\n", 0, index)
    start = text.rfind("\n", 0, index) + 1
    return {"line": line, "character": utf16_len(text[start:index])}


def hundred_line_doc() -> str:
    parts = ['#include "common.h"\n#define N 4096\n']
    i = 0
    while sum(p.count("\n") for p in parts) < 95:
        parts.append(KERNEL.format(n=i))
        i += 1
    parts.append("int main() {\n  fz0<<<N / 256, 256>>>(0, 0, N);\n}\n")
    return "".join(parts)


def huge_line(rng: random.Random) -> str:
    size = rng.randrange(100_000, 200_000)
    out: list[str] = []
    n = 0
    while n < size:
        t = rng.choice(TOKENS).replace("\n", " ")
        out.append(t)
        n += len(t)
    return "".join(out) + "\n"


class Fuzzer:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.rng = random.Random(args.seed)
        self.stats = Stats()
        self.tmp = tempfile.mkdtemp(prefix="roofline-fuzz-")
        env = dict(os.environ)
        self.client = Client(SERVER, env)
        texts = [(p.name, p.read_text("utf-8")) for p in sorted(FIXTURES.glob("*.c*"))]
        texts.append(("hundred.cu", hundred_line_doc()))
        self.docs = [
            Doc(Path(self.tmp, f"{i}_{name}").as_uri(), text, text)
            for i, (name, text) in enumerate(texts)
        ]
        self.t0 = time.monotonic()

    # -- protocol -------------------------------------------------------------------------------
    def initialize(self) -> None:
        c = self.client
        options = {"counts": self.args.counts, "cacheDir": os.path.join(self.tmp, "cache")}
        rid = c.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": Path(self.tmp).as_uri(),
                "capabilities": {},
                "initializationOptions": options,
            },
        )
        self.wait_for(rid, 120)
        c.notify("initialized", {})

    def open(self, doc: Doc) -> None:
        doc.text, doc.version, doc.open = doc.original, doc.version + 1, True
        doc.opened_at = self.stats.edits
        doc.reopen_after = self.rng.randrange(self.args.reopen // 2, self.args.reopen * 3 // 2)
        lang = "cpp" if doc.uri.endswith(".cpp") else "cuda-cpp"
        self.client.notify(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": doc.uri,
                    "languageId": lang,
                    "version": doc.version,
                    "text": doc.text,
                }
            },
        )

    def close(self, doc: Doc) -> None:
        doc.open = False
        self.client.notify("textDocument/didClose", {"textDocument": {"uri": doc.uri}})
        self.stats.reopens += 1

    def edit(self, doc: Doc) -> None:
        rng, text = self.rng, doc.text
        n = len(text)
        longest = max((len(x) for x in text.split("\n")), default=0)
        if longest > 50_000 and rng.random() < 0.3:  # take the huge line out again
            i = max(range(len(text.split("\n"))), key=lambda j: len(text.split("\n")[j]))
            start = sum(len(x) + 1 for x in text.split("\n")[:i])
            end = min(n, start + longest + 1)
            new = ""
        else:
            start = rng.randrange(0, n + 1)
            r = rng.random()
            grow = n < 3 * len(doc.original) + 2000
            if rng.random() < self.args.huge and longest < 50_000:
                end, new = start, huge_line(rng)
                self.stats.huge_lines += 1
            elif r < 0.55 and grow:
                end, new = start, rng.choice(TOKENS)
            elif r < 0.6 and grow:
                end, new = start, KERNEL.format(n=rng.randrange(1000))
            elif r < 0.85:
                end, new = min(n, start + rng.randrange(1, 40)), ""
            else:
                end, new = min(n, start + rng.randrange(0, 10)), rng.choice(TOKENS)
        # never split a surrogate pair or a \r\n: positions are UTF-16 and BMP-only here
        rng_ = {"start": position(text, start), "end": position(text, end)}
        doc.text = text[:start] + new + text[end:]
        doc.version += 1
        self.client.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": doc.uri, "version": doc.version},
                "contentChanges": [{"range": rng_, "text": new}],
            },
        )
        self.stats.edits += 1

    def random_request(self, doc: Doc) -> None:
        rng, c = self.rng, self.client
        td = {"uri": doc.uri}
        pos = position(doc.text, rng.randrange(0, len(doc.text) + 1))
        end = position(doc.text, len(doc.text))
        r = rng.random()
        if r < self.args.bad:
            method, params = rng.choice(BAD_REQUESTS)
            params = json.loads(json.dumps(params).replace("{uri}", doc.uri))
            c.request(method, params, bad=True)
        elif r < 0.4:
            c.request("textDocument/hover", {"textDocument": td, "position": pos})
        elif r < 0.6:
            full = {"start": {"line": 0, "character": 0}, "end": end}
            c.request("textDocument/inlayHint", {"textDocument": td, "range": full})
        elif r < 0.75:
            c.request("textDocument/codeLens", {"textDocument": td})
        elif r < 0.95:
            c.request(
                "textDocument/codeAction",
                {
                    "textDocument": td,
                    "range": {"start": pos, "end": pos},
                    "context": {"diagnostics": []},
                },
            )
        else:
            line = rng.randrange(-3, doc.text.count("\n") + 2)
            c.request(
                "workspace/executeCommand",
                {"command": "roofline.explainKernel", "arguments": [doc.uri, line]},
            )
        self.stats.requests += 1

    # -- answers --------------------------------------------------------------------------------
    def collect(self, block_s: float = 0.0) -> None:
        """Take the answers that arrived (waiting up to ``block_s`` for the first)."""
        c, s = self.client, self.stats
        timeout: float | None = block_s
        while True:
            try:
                rid, at, msg = c.answers.get(timeout=timeout) if timeout else c.answers.get_nowait()
            except queue.Empty:
                break
            timeout = None
            sent = c.pending.pop(rid, None)
            if sent is None:
                continue
            t, method, bad = sent
            dt = at - t
            s.answered += 1
            if method == "initialize":  # the server's start-up, not an answer time
                s.startup_s = dt
                continue
            s.latencies.append(dt)
            if dt > s.worst_s:
                s.worst_s, s.worst_method = dt, method
            err = msg.get("error")
            if bad and (err is None or err.get("code") != -32602):
                s.wrong.append(f"{method} with bad params answered {json.dumps(msg)[:200]}")
            elif not bad and err is not None and method != "workspace/executeCommand":
                s.wrong.append(f"{method} answered {json.dumps(err)[:200]}")
            elif (
                method == "workspace/executeCommand"
                and err is not None
                and err.get("code") != -32602
            ):
                s.wrong.append(f"explainKernel answered {json.dumps(err)[:200]}")
        now = time.monotonic()
        for rid, (t, method, _bad) in list(c.pending.items()):
            if now - t > self.args.hang_s and method != "initialize":
                s.hangs.append(f"{method} #{rid} unanswered after {now - t:.1f} s")
                del c.pending[rid]

    def wait_for(self, rid: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while rid in self.client.pending and time.monotonic() < deadline:
            self.collect(0.05)
            if not self.client.alive():
                return

    def rss_mb(self) -> float:
        try:
            with open(f"/proc/{self.client.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) / 1024
        except OSError:
            pass
        return float("nan")

    # -- the run --------------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        a, s, c, rng = self.args, self.stats, self.client, self.rng
        self.initialize()
        for d in self.docs:
            self.open(d)
        crashed = False
        while s.edits < a.edits:
            if not c.alive():
                crashed = True
                break
            doc = rng.choice([d for d in self.docs if d.open] or self.docs)
            if not doc.open:
                self.open(doc)
                continue
            if s.edits - doc.opened_at > doc.reopen_after:
                self.close(doc)
                if rng.random() < 0.8:
                    self.open(doc)
                continue
            try:
                self.edit(doc)
                if rng.random() < a.requests:
                    self.random_request(doc)
            except (BrokenPipeError, OSError):
                crashed = True
                break
            while len(c.pending) > a.outstanding:
                self.collect(0.05)
                if not c.alive():
                    break
            self.collect()
            if s.edits % a.every == 0:
                s.rss.append((s.edits, self.rss_mb()))
                if not a.json:
                    print(self.progress_line(), flush=True)
        # drain what is still unanswered
        deadline = time.monotonic() + a.hang_s
        while c.pending and time.monotonic() < deadline and c.alive():
            self.collect(0.05)
        self.collect()
        for rid, (_t, method, _b) in list(c.pending.items()):
            s.hangs.append(f"{method} #{rid} unanswered at the end")
        exit_code = self.finish() if c.alive() else None
        crashed = crashed or exit_code not in (0,)
        return self.summary(crashed, exit_code)

    def finish(self) -> int | None:
        c = self.client
        rid = c.request("shutdown", None)
        self.wait_for(rid, 10)
        c.notify("exit", None)
        try:
            return c.proc.wait(10)
        except subprocess.TimeoutExpired:
            c.proc.kill()
            return None

    def progress_line(self) -> str:
        s = self.stats
        el = time.monotonic() - self.t0
        return (
            f"edits {s.edits:7d}  {s.edits / el:6.1f} edits/s  rss {self.rss_mb():6.1f} MB  "
            f"worst {s.worst_s * 1000:7.1f} ms ({s.worst_method})  requests {s.requests}  "
            f"hangs {len(s.hangs)}  tracebacks {self.client.tracebacks}  wrong {len(s.wrong)}"
        )

    def summary(self, crashed: bool, exit_code: int | None) -> dict[str, Any]:
        s = self.stats
        el = time.monotonic() - self.t0
        lat = sorted(s.latencies)
        after = [mb for n, mb in s.rss if n >= 2000]
        base = after[0] if after else float("nan")
        return {
            "edits": s.edits,
            "seconds": round(el, 1),
            "edits_per_s": round(s.edits / el, 1) if el else 0,
            "startup_s": round(s.startup_s, 1),
            "requests": s.requests,
            "answered": s.answered,
            "worst_latency_ms": round(s.worst_s * 1000, 1),
            "worst_method": s.worst_method,
            "p99_latency_ms": round(lat[int(len(lat) * 0.99)] * 1000, 1) if lat else None,
            "rss_mb_after_2000": round(base, 1),
            "rss_mb_max_after_2000": round(max(after), 1) if after else None,
            "rss_growth_mb": round(max(after) - base, 1) if after else None,
            "rss_mb_last": round(s.rss[-1][1], 1) if s.rss else None,
            "rss_over_time": [(n, round(mb, 1)) for n, mb in s.rss],
            "huge_lines": s.huge_lines,
            "reopens": s.reopens,
            "crashes": int(crashed),
            "exit_code": exit_code,
            "hangs": len(s.hangs),
            "hang_examples": s.hangs[:5],
            "tracebacks": self.client.tracebacks,
            "traceback_examples": ["\n".join(t) for t in self.client.traceback_texts],
            "wrong_answers": len(s.wrong),
            "wrong_examples": s.wrong[:5],
            "stderr_tail": self.client.stderr[-10:],
        }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--edits", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--counts", default="source", help="the server's counts setting")
    p.add_argument("--requests", type=float, default=0.3, help="requests per edit")
    p.add_argument("--bad", type=float, default=0.02, help="share of requests with bad params")
    p.add_argument("--huge", type=float, default=0.0005, help="share of edits adding a huge line")
    p.add_argument("--reopen", type=int, default=4000, help="edits between close/re-open")
    p.add_argument("--outstanding", type=int, default=16, help="unanswered requests at most")
    p.add_argument("--hang-s", type=float, default=5.0, help="a request slower than this hangs")
    p.add_argument("--every", type=int, default=1000, help="progress line every N edits")
    p.add_argument("--json", action="store_true", help="print only the JSON summary")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    fuzzer = Fuzzer(args)
    try:
        result = fuzzer.run()
    finally:
        if fuzzer.client.alive():
            fuzzer.client.proc.kill()
    if args.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print(f"{k}: {v}")
    bad = result["crashes"] or result["hangs"] or result["tracebacks"] or result["wrong_answers"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
