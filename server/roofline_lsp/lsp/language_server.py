"""The protocol object: the pygls server that owns the engine and speaks for it.

:class:`RooflineServer` holds one :class:`~roofline_lsp.engine.workspace.Workspace` (the
configuration, documents and analyses) and one
:class:`~roofline_lsp.engine.scheduler.Scheduler` (when work runs), and implements the
scheduler's :class:`~roofline_lsp.engine.scheduler.Frontend`: diagnostics, messages, logs,
``$/progress`` and view refreshes. It keeps only what belongs to the protocol: the client's
capabilities, which messages were shown, which documents have diagnostics.

:class:`RooflineProtocol` answers every request, whatever pygls would do by default: bad
params, lifecycle mistakes and broken JSON get their JSON-RPC error (see its docstring), and
messages are read by :mod:`~roofline_lsp.lsp.framing` (stdio and TCP), which survives broken
framing.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import json
import logging
import sys
import threading
import uuid
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import Future
from typing import Any, BinaryIO, TypeVar, cast

from lsprotocol import types as lsp
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcServerNotInitialized,
)
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
)
from pygls.protocol.language_server import lsp_method

from roofline_lsp import __version__
from roofline_lsp.engine.scheduler import Scheduler
from roofline_lsp.engine.workspace import DocumentAnalysis, Workspace, one_line
from roofline_lsp.lsp.diagnostics import diagnostic
from roofline_lsp.lsp.framing import ByteFeed, pump_file, pump_stream, read_frames
from roofline_lsp.syntax.positions import Encoding

log = logging.getLogger("roofline_lsp.lsp")

F = TypeVar("F", bound=Callable[..., Any])


UINTEGER_MAX = 2**31 - 1  # LSP positions are ``uinteger``s


class RooflineProtocol(LanguageServerProtocol):
    """pygls' protocol, made to answer every request and to keep nothing per message.

    Document sync goes to our handlers only: pygls' workspace would keep a second copy of
    every document (and re-split a 20 MB one on each keystroke). Each message body comes
    through :meth:`receive` (from :mod:`~roofline_lsp.lsp.framing`), which answers what
    pygls would leave unanswered: a body that is not JSON (ParseError), not a JSON-RPC
    message (InvalidRequest), a request before ``initialize`` (ServerNotInitialized), a
    second ``initialize`` or a request after ``shutdown`` (InvalidRequest), params of the
    wrong shape or positions out of range (InvalidParams), each with one log line."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.initialize_seen = False

    # -- receiving --------------------------------------------------------------------------
    def receive(self, body: bytes) -> None:
        """One message body from the client: dispatched, or answered with an error. A failure
        of the server's own is logged; it never ends the reading loop."""
        try:
            self._receive(body)
        except Exception as e:
            log.error("could not handle a message: %s", one_line(e), exc_info=True)

    def _receive(self, body: bytes) -> None:
        try:
            data = json.loads(body)
        except (ValueError, UnicodeDecodeError) as e:
            # no id to answer (an error with a null id breaks some clients' readers): log
            log.warning("message of %d bytes is not JSON: %s", len(body), one_line(e)[:200])
            return
        if not isinstance(data, dict) or data.get("jsonrpc") != "2.0":
            msg_id = data.get("id") if isinstance(data, dict) else None
            log.warning("message is not a JSON-RPC 2.0 object: %.80s", body)
            self.answer_error(msg_id, JsonRpcInvalidRequest("not a JSON-RPC 2.0 message"))
            return
        method, msg_id = data.get("method"), data.get("id")
        if "id" in data and (isinstance(msg_id, bool) or not isinstance(msg_id, int | str)):
            log.warning("message with an invalid id %.40r", msg_id)
            self.answer_error(None, JsonRpcInvalidRequest(f"invalid id {msg_id!r:.40}"))
            return
        if method is None:
            if "id" in data and ("result" in data or "error" in data):
                self.dispatch(data, None, None)  # a response to one of our requests
            else:
                log.warning("message without method, result or error: %.80s", body)
                self.answer_error(msg_id, JsonRpcInvalidRequest("no method"))
            return
        if not isinstance(method, str):
            log.warning("message with a method that is not a string: %.40r", method)
            self.answer_error(msg_id, JsonRpcInvalidRequest("method must be a string"))
            return
        request = "id" in data
        refused = self.refusal(method, request)
        if refused is not None:
            if request:
                log.warning("%s refused: %s", method, refused.message)
                self.answer_error(msg_id, refused)
            return
        problem = position_problem(data.get("params"))
        if problem is not None:
            self.invalid_params(method, msg_id if request else None, problem, request)
            return
        self.dispatch(data, method, msg_id if request else None)

    def refusal(self, method: str, request: bool) -> JsonRpcException | None:
        """Why the lifecycle forbids ``method`` now (None: it does not)."""
        if method == lsp.EXIT:
            return None
        if self._shutdown:
            return JsonRpcInvalidRequest(f"{method} after shutdown")
        if method == lsp.INITIALIZE:
            if self.initialize_seen:
                return JsonRpcInvalidRequest("initialize was already received")
            return None
        if not self.initialize_seen:
            return JsonRpcServerNotInitialized(f"{method} before initialize")
        return None

    def dispatch(self, data: dict[str, Any], method: str | None, msg_id: object) -> None:
        """Give a well-formed message to pygls; bad params are answered InvalidParams."""
        try:
            message = self.structure(data)
        except Exception as e:
            self.invalid_params(method, msg_id, one_line(e), msg_id is not None)
            return
        if method == lsp.INITIALIZE:
            self.initialize_seen = True
        self.handle_message(message)

    def structure(self, data: dict[str, Any]) -> Any:
        """pygls' ``structure_message`` without its traceback on stderr for bad params."""
        if "id" in data:
            if "error" in data:
                return self._converter.structure(data, lsp.ResponseErrorMessage)
            if "method" in data:
                kind = self.get_message_type(data["method"])
                return self._converter.structure(data, kind or JsonRPCRequestMessage)
            kind = self._result_types.pop(data["id"], None) or JsonRPCResponseMessage
            return self._converter.structure(data, kind)
        kind = self.get_message_type(data.get("method", ""))
        return self._converter.structure(data, kind or JsonRPCNotification)

    def invalid_params(self, method: str | None, msg_id: object, why: str, request: bool) -> None:
        log.warning("%s: invalid params: %s", method, why[:200])
        if request:
            self.answer_error(msg_id, JsonRpcInvalidParams(f"invalid params: {why[:200]}"))

    def answer_error(self, msg_id: object, error: JsonRpcException) -> None:
        """Send ``error`` as the answer to ``msg_id`` (nothing without an id: an error with a
        null id breaks some clients' readers; the log line says it)."""
        if msg_id is not None:
            self._send_response(cast(Any, msg_id), error=error.to_response_error())

    def _handle_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        future = self._request_futures.get(msg_id)
        if future is not None and future.done():  # cancelled (shutdown) before the answer
            self._request_futures.pop(msg_id, None)
            return
        super()._handle_response(msg_id, result, error)

    # -- pygls internals: no traceback for a client's mistake, nothing kept per notification -
    def _send_handler_result(self, future: Future[Any], *, msg_id: Any) -> None:
        if not future.cancelled() and isinstance(future.exception(), JsonRpcException):
            self._request_futures.pop(msg_id, None)
            exc = cast(JsonRpcException, future.exception())
            log.warning("request %s: %s", msg_id, exc.message)
            self._send_response(msg_id, error=exc.to_response_error())
            return
        super()._send_handler_result(future, msg_id=msg_id)

    def _execute_handler(
        self,
        msg_id: Any,
        handler: Any,
        callback: Any,
        args: tuple[Any, ...] | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> None:
        super()._execute_handler(msg_id, handler, callback, args, kwargs)
        # pygls files the future of every notification and command under a fresh id and
        # never removes it (a few kB, with its traceback, kept per keystroke): remove it
        # once done
        future = self._request_futures.get(msg_id)
        if future is None:
            return
        if future.done():
            self._request_futures.pop(msg_id, None)
            return

        def forget(done: Any) -> None:
            if self._request_futures.get(msg_id) is done:
                del self._request_futures[msg_id]

        future.add_done_callback(forget)

    @lsp_method(lsp.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(
        self, params: lsp.DidOpenTextDocumentParams
    ) -> Iterator[tuple[Callable[..., Any], tuple[Any, ...], None]]:
        if (handler := self.fm.features.get(lsp.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(
        self, params: lsp.DidChangeTextDocumentParams
    ) -> Iterator[tuple[Callable[..., Any], tuple[Any, ...], None]]:
        if (handler := self.fm.features.get(lsp.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(
        self, params: lsp.DidCloseTextDocumentParams
    ) -> Iterator[tuple[Callable[..., Any], tuple[Any, ...], None]]:
        if (handler := self.fm.features.get(lsp.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None


class RooflineServer(LanguageServer):
    """The language server: the engine plus what the protocol needs to remember."""

    def __init__(self, ws: Workspace | None = None) -> None:
        super().__init__(
            "roofline-lsp",
            __version__,
            text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
            protocol_cls=RooflineProtocol,
        )
        self.ws = ws or Workspace()
        self.scheduler = Scheduler(self.ws, self)
        self.init_options: object = None  # the ``roofline`` part of initializationOptions
        self.shown_errors: dict[str, str] = {}  # setting key -> last message shown
        self.published: set[str] = set()  # uris with non-empty diagnostics
        self.progress_tokens = 0
        self.shut_down = False  # the client sent ``shutdown`` (``exit`` then returns 0)

    # -- transport: pygls' server loop with our reader (``framing``) -------------------------
    @property
    def rprotocol(self) -> RooflineProtocol:
        return cast(RooflineProtocol, self.protocol)

    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        """Serve on stdin/stdout until the input ends (or ``exit``)."""
        self._stop_event = stop = threading.Event()
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        fd = (stdin or sys.stdin.buffer).fileno()

        async def serve() -> None:
            feed = ByteFeed()
            pump_file(fd, asyncio.get_running_loop(), feed)
            await read_frames(feed, self.rprotocol.receive, stop.is_set)

        try:
            asyncio.run(serve())
        except BrokenPipeError:
            log.warning("the client's pipe is closed: stopping")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.stop()

    def start_tcp(self, host: str, port: int) -> None:
        """Serve one client at a time on ``host:port`` (until interrupted)."""
        self._stop_event = stop = threading.Event()

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.protocol.set_writer(cast(Any, writer))
            feed = ByteFeed()
            pump = asyncio.ensure_future(pump_stream(reader, feed))
            try:
                await read_frames(feed, self.rprotocol.receive, stop.is_set)
            finally:
                pump.cancel()
            self.stop()

        async def tcp_server() -> None:
            self._server = await asyncio.start_server(connection, host, port)
            async with self._server:
                await self._server.serve_forever()

        with contextlib.suppress(asyncio.CancelledError):
            asyncio.run(tcp_server())

    def stop(self) -> None:
        """pygls' ``shutdown`` (untyped): stop the loop and the thread pool."""
        cast(Any, self).shutdown()

    # -- client facts ---------------------------------------------------------------------------
    @property
    def encoding(self) -> Encoding:
        try:
            enc = self.server_capabilities.position_encoding
        except Exception:
            return "utf-16"
        return cast(Encoding, str(enc)) if str(enc) in ("utf-8", "utf-32") else "utf-16"

    def capable(self, path: str) -> bool:
        """Whether the client announced the capability at the dotted ``path``."""
        try:
            obj: object = self.client_capabilities
        except Exception:
            return False
        for part in path.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                return False
        return bool(obj)

    # -- messages -------------------------------------------------------------------------------
    def message(self, text: str, kind: lsp.MessageType = lsp.MessageType.Warning) -> None:
        with contextlib.suppress(Exception):
            self.window_show_message(lsp.ShowMessageParams(type=kind, message=text))

    def logmsg(self, text: str, kind: lsp.MessageType = lsp.MessageType.Log) -> None:
        log.info("%s", text)
        with contextlib.suppress(Exception):
            self.window_log_message(lsp.LogMessageParams(type=kind, message=text))

    def report_server_error(self, error: Exception, source: Any) -> None:
        # Malformed or unknown messages: log, never pop up or stop.
        log.warning("protocol error (%s): %s", getattr(source, "__name__", source), error)

    def show_config_error(self, key: str, text: str) -> None:
        """Show a settings problem once (until the setting is valid again)."""
        if self.shown_errors.get(key) == text:
            return
        self.shown_errors[key] = text
        self.message(f"{text} (keeping the last valid value)")

    # -- the scheduler's Frontend -----------------------------------------------------------------
    def publish(self, analysis: DocumentAnalysis) -> None:
        a = analysis
        enc = self.encoding
        diags = [diagnostic(a, adv, enc) for adv in a.advice]
        if a.report is None and a.uri not in self.published:
            return  # a file without kernels: nothing to say, nothing to clear
        if diags:
            self.published.add(a.uri)
        else:
            self.published.discard(a.uri)
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=a.uri, diagnostics=diags, version=a.version)
        )

    def unpublish(self, uri: str) -> None:
        """Clear the diagnostics of ``uri`` (closed) if it has any."""
        if uri in self.published:
            self.published.discard(uri)
            self.text_document_publish_diagnostics(
                lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[])
            )

    def refresh_views(self) -> None:
        if self.capable("workspace.inlay_hint.refresh_support"):
            self.scheduler.spawn(quietly(self.workspace_inlay_hint_refresh_async(None)))
        if self.capable("workspace.code_lens.refresh_support"):
            self.scheduler.spawn(quietly(self.workspace_code_lens_refresh_async(None)))

    def log(self, text: str) -> None:
        self.logmsg(text)

    def show(self, text: str, info: bool = False) -> None:
        self.message(text, lsp.MessageType.Info if info else lsp.MessageType.Warning)

    def config_problem(self, key: str, text: str) -> None:
        self.show_config_error(key, text)

    async def progress_begin(self, title: str) -> str | None:
        if not self.capable("window.work_done_progress"):
            return None
        self.progress_tokens += 1
        token = f"roofline-{self.progress_tokens}-{uuid.uuid4().hex[:8]}"
        try:
            await asyncio.wait_for(self.work_done_progress.create_async(token), 5)
        except Exception:
            return None
        self.work_done_progress.begin(
            token, lsp.WorkDoneProgressBegin(title=title, cancellable=False, percentage=0)
        )
        return token

    def progress_report(self, token: str, message: str, pct: int | None = None) -> None:
        with contextlib.suppress(Exception):
            self.work_done_progress.report(
                token, lsp.WorkDoneProgressReport(message=message, percentage=pct)
            )

    def progress_end(self, token: str) -> None:
        with contextlib.suppress(Exception):
            self.work_done_progress.end(token, lsp.WorkDoneProgressEnd(message=None))


def position_problem(params: object, depth: int = 0) -> str | None:
    """Why ``params`` holds a position that is not one (a ``line`` or ``character`` that is
    not an integer in 0..2^31-1), or None. pygls would truncate 1.5 to 1 and let -1 or 2^64
    through."""
    if depth > 8:
        return None
    if isinstance(params, dict):
        if "line" in params and "character" in params:
            for key in ("line", "character"):
                v = params[key]
                if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= UINTEGER_MAX:
                    return f"position {key} must be an integer in 0..{UINTEGER_MAX}, got {v!r:.40}"
            return None
        for v in params.values():
            if isinstance(v, dict | list) and (p := position_problem(v, depth + 1)) is not None:
                return p
    elif isinstance(params, list):
        for v in params[:64]:
            if isinstance(v, dict | list) and (p := position_problem(v, depth + 1)) is not None:
                return p
    return None


async def quietly(aw: Awaitable[object]) -> None:
    """Await ``aw``, ignoring its failure (a client that does not answer a refresh)."""
    with contextlib.suppress(Exception):
        await aw


def guard(default: Callable[[], Any]) -> Callable[[F], F]:
    """A failing feature logs and answers ``default()``; it never takes the server down."""

    def wrap(fn: F) -> F:
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def awrapped(ls: RooflineServer, *args: Any) -> Any:
                try:
                    return await fn(ls, *args)
                except asyncio.CancelledError:
                    raise
                except Exception as e:
                    log.exception("%s failed", fn.__name__)
                    ls.logmsg(
                        f"roofline: {fn.__name__} failed: {one_line(e)}", lsp.MessageType.Error
                    )
                    return default()

            return cast(F, awrapped)

        @functools.wraps(fn)
        def wrapped(ls: RooflineServer, *args: Any) -> Any:
            try:
                return fn(ls, *args)
            except Exception as e:
                log.exception("%s failed", fn.__name__)
                ls.logmsg(f"roofline: {fn.__name__} failed: {one_line(e)}", lsp.MessageType.Error)
                return default()

        return cast(F, wrapped)

    return wrap
