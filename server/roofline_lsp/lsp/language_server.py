"""The protocol object: the pygls server that owns the engine and speaks for it.

:class:`RooflineServer` holds one :class:`~roofline_lsp.engine.workspace.Workspace` (the
configuration, documents and analyses) and one
:class:`~roofline_lsp.engine.scheduler.Scheduler` (when work runs), and implements the
scheduler's :class:`~roofline_lsp.engine.scheduler.Frontend`: diagnostics, messages, logs,
``$/progress`` and view refreshes. It keeps only what belongs to the protocol: the client's
capabilities, which messages were shown, which documents have diagnostics.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar, cast

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from roofline_lsp import __version__
from roofline_lsp.engine.scheduler import Scheduler
from roofline_lsp.engine.workspace import DocumentAnalysis, Workspace, one_line
from roofline_lsp.lsp.diagnostics import diagnostic
from roofline_lsp.syntax.positions import Encoding

log = logging.getLogger("roofline_lsp.lsp")

F = TypeVar("F", bound=Callable[..., Any])


class RooflineProtocol(LanguageServerProtocol):
    """Document sync goes to our handlers only: pygls' workspace would keep a second copy of
    every document (and re-split a 20 MB one on each keystroke)."""

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
