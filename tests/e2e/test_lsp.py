"""End to end through pytest-lsp's real client over stdio: hover, inlay hints, code lens,
diagnostics, code actions, commands, configuration, edits and robustness."""

from __future__ import annotations

import asyncio

import pytest
from lsp_session import (
    FIXTURES,
    SERVER_COMMAND,
    RawServer,
    RecordingClient,
    apply_edits,
    capabilities,
    change,
    diagnostics_for,
    hover_text,
    initialize,
    open_fixture,
    open_text,
    position_of,
    uri_of,
)
from lsprotocol import types as lsp

INFO = lsp.DiagnosticSeverity.Information
HINT = lsp.DiagnosticSeverity.Hint


async def hover(client: RecordingClient, uri: str, pos: lsp.Position) -> lsp.Hover | None:
    return await client.text_document_hover_async(
        lsp.HoverParams(text_document=lsp.TextDocumentIdentifier(uri=uri), position=pos)
    )


async def inlay_hints(
    client: RecordingClient, uri: str, lines: int = 10_000
) -> list[lsp.InlayHint]:
    result = await client.text_document_inlay_hint_async(
        lsp.InlayHintParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            range=lsp.Range(lsp.Position(0, 0), lsp.Position(lines, 0)),
        )
    )
    return list(result or [])


async def code_lenses(client: RecordingClient, uri: str) -> list[lsp.CodeLens]:
    result = await client.text_document_code_lens_async(
        lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
    )
    return list(result or [])


async def code_actions(
    client: RecordingClient, uri: str, rng: lsp.Range, diags: list[lsp.Diagnostic] | None = None
) -> list[lsp.CodeAction]:
    result = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            range=rng,
            context=lsp.CodeActionContext(diagnostics=diags or []),
        )
    )
    return [a for a in (result or []) if isinstance(a, lsp.CodeAction)]


async def command(client: RecordingClient, name: str, *args: object) -> object:
    return await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command=name, arguments=list(args))
    )


def send_raw(client: RecordingClient, body: bytes) -> None:
    server = client._server
    assert server is not None and server.stdin is not None
    server.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)


def edits_of(action: lsp.CodeAction, uri: str) -> list[lsp.TextEdit]:
    assert action.edit is not None
    if action.edit.document_changes:
        out: list[lsp.TextEdit] = []
        for dc in action.edit.document_changes:
            assert isinstance(dc, lsp.TextDocumentEdit) and dc.text_document.uri == uri
            out.extend(e for e in dc.edits if isinstance(e, lsp.TextEdit))
        return out
    assert action.edit.changes is not None
    return list(action.edit.changes[uri])


# --------------------------------------------------------------------------------------------
# hover, inlay hints, code lens
# --------------------------------------------------------------------------------------------


async def test_hover_on_name_launch_and_body_with_utf16_columns(client: RecordingClient) -> None:
    await initialize(client)
    uri, text = open_fixture(client, "kernels.cu")
    await diagnostics_for(client, uri, 1)

    # The name follows "/* 🚀 streams */" on its line: the emoji is 2 UTF-16 units.
    name = position_of(text, "scale_add(")
    h = await hover(client, uri, name)
    card = hover_text(h)
    assert "`scale_add`" in card and "bandwidth-bound" in card and "H100" in card
    assert "ridge" in card and "(static, " in card
    lines = card.rstrip("\n").split("\n")
    assert len(lines) <= 12 and max(map(len, lines)) <= 100, card
    assert h is not None and h.range is not None
    assert h.range.start == name
    assert h.range.end == lsp.Position(name.line, name.character + len("scale_add"))
    # One UTF-16 unit before the name (the space after the comment) is outside the kernel.
    outside = await hover(client, uri, lsp.Position(name.line, 0))
    assert outside is None or "scale_add" not in hover_text(outside)

    # inside the body: one line about that source line, not the card
    body = position_of(text, "y[i] = a * (x[i]")
    line = hover_text(await hover(client, uri, body))
    assert line.startswith(f"line {body.line + 1}: 100% of DRAM bytes") and "\n" not in line.strip()

    launch = position_of(text, "square_all<<<")
    launched = hover_text(await hover(client, uri, launch))
    assert launched.startswith("`square_all`: **") and "line 11" in launched

    assert await hover(client, uri, position_of(text, "cudaDeviceSynchronize")) is None


ASSUMING = (
    "__global__ void grow(float *x, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) x[i] += 1.0f;\n"
    "}\n"
    "void run(float *x) { grow<<<(N + 255) / 256, 256>>>(x, N); }\n"
)


async def test_hover_names_what_was_assumed_until_a_hint_settles_it(
    client: RecordingClient,
) -> None:
    await initialize(client, {"counts": "source"})
    uri = uri_of("assumed.cu")
    open_text(client, uri, ASSUMING)
    await diagnostics_for(client, uri, 1)
    card = hover_text(await hover(client, uri, position_of(ASSUMING, "grow(")))
    # N is defined nowhere: the launch is the default one and the card says which hint fixes it
    assert "Assumed: launch size unknown: assumed 1.05 M threads; add `// roofline: N=...`" in card
    since = len(client.published)
    change(client, uri, 2, (0, 0), (0, 0), "// roofline: N=1<<24\n")
    await diagnostics_for(client, uri, 2, since=since)
    text = "// roofline: N=1<<24\n" + ASSUMING
    card = hover_text(await hover(client, uri, position_of(text, "grow(")))
    assert "bandwidth-bound" in card and "Assumed:" not in card, card


ROWS = (
    "__global__ void spmv(const int *row, const int *col, const float *v, const float *x,\n"
    "                     float *y) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  float s = 0.0f;\n"
    "  for (int j = row[i]; j < row[i + 1]; j++)\n"
    "    s += v[j] * x[col[j]];\n"
    "  y[i] = s;\n"
    "}\n"
    "void run(const int *r, const int *c, const float *v, const float *x, float *y) {\n"
    "  spmv<<<4096, 256>>>(r, c, v, x, y);\n"
    "}\n"
)


async def test_a_loop_bounded_by_data_is_named_until_a_trips_hint_settles_it(
    client: RecordingClient,
) -> None:
    await initialize(client, {"counts": "source"})
    uri = uri_of("rows.cu")
    open_text(client, uri, ROWS)
    await diagnostics_for(client, uri, 1)
    card = hover_text(await hover(client, uri, position_of(ROWS, "spmv(")))
    # (the card's line is clipped after the hint: the explain lens has it whole)
    assert (
        "Assumed: loop over j (line 5): bound read from memory, assumed 16; add"
        " `// roofline: trips=...` a" in card
    ), card
    # the code action writes the assumption down above the loop, for the user to correct
    at = position_of(ROWS, "spmv(")
    actions = await code_actions(client, uri, lsp.Range(at, at))
    (state,) = [a for a in actions if a.kind == lsp.CodeActionKind.RefactorRewrite]
    assert state.title == "Roofline: state the trips of the loop on line 5 (assumed 16)"
    (edit,) = edits_of(state, uri)
    assert (edit.range.start.line, edit.range.start.character) == (4, 0)
    assert edit.new_text == "  // roofline: trips=16\n"
    since = len(client.published)
    change(client, uri, 2, (4, 0), (4, 0), "  // roofline: trips=8\n")  # corrected to 8
    await diagnostics_for(client, uri, 2, since=since)
    lines = ROWS.split("\n")
    text = "\n".join([*lines[:4], "  // roofline: trips=8", *lines[4:]])
    card = hover_text(await hover(client, uri, position_of(text, "spmv(")))
    assert "Assumed:" not in card and "8 trips" in card, card


TYPED = (
    "template <typename T>\n"
    "__global__ void axpy(const T *x, T *y, T a, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n"
)


async def test_a_template_type_nothing_fixes_is_named_until_a_type_hint_settles_it(
    client: RecordingClient,
) -> None:
    await initialize(client, {"counts": "source"})
    uri = uri_of("typed.cu")
    open_text(client, uri, TYPED)
    await diagnostics_for(client, uri, 1)
    card = hover_text(await hover(client, uri, position_of(TYPED, "axpy(")))
    assert "template type T assumed float" in card and "`// roofline: T=double`" in card, card
    assert "fp32" in card.lower()
    since = len(client.published)
    change(client, uri, 2, (0, 0), (0, 0), "// roofline: T=double n=1<<20\n")
    await diagnostics_for(client, uri, 2, since=since)
    text = "// roofline: T=double n=1<<20\n" + TYPED
    card = hover_text(await hover(client, uri, position_of(text, "axpy(")))
    assert "fp64" in card.lower() and "template type" not in card, card


async def test_results_on_open_without_waiting_for_diagnostics(client: RecordingClient) -> None:
    # The requests an editor sends right after didOpen answer from the first analysis.
    await initialize(client, {"counts": "source"})
    uri, _ = open_fixture(client, "kernels.cu")
    hints, lenses = await asyncio.gather(inlay_hints(client, uri), code_lenses(client, uri))
    assert len(hints) == 2 and len([x for x in lenses if x.command]) == 4
    # ... and the client is asked to fetch them again once they exist (it may have asked
    # before the analysis with a request that timed out)
    for _ in range(50):
        if client.refreshes["inlayHint"] and client.refreshes["codeLens"]:
            break
        await asyncio.sleep(0.05)
    assert client.refreshes["inlayHint"] >= 1 and client.refreshes["codeLens"] >= 1
    # an OpenMP file, source counts: hints at once too
    cpp, _ = open_fixture(client, "offload.cpp", language="cpp")
    omp = await inlay_hints(client, cpp)
    assert omp and all(isinstance(h.label, str) and "-bound" in h.label for h in omp)


async def test_plaintext_hover_when_the_client_asks_for_it(client: RecordingClient) -> None:
    caps = capabilities()
    assert caps.text_document is not None
    caps.text_document.hover = lsp.HoverClientCapabilities(
        content_format=[lsp.MarkupKind.PlainText]
    )
    await initialize(client, caps=caps)
    uri, text = open_fixture(client, "kernels.cu")
    h = await hover(client, uri, position_of(text, "scale_add("))
    assert h is not None and isinstance(h.contents, lsp.MarkupContent)
    assert h.contents.kind == lsp.MarkupKind.PlainText
    card = h.contents.value
    assert card.startswith("scale_add: bandwidth-bound on H100"), card
    assert not any(m in card for m in ("**", "`", "|")), card
    lines = card.rstrip("\n").split("\n")
    assert len(lines) <= 12 and max(map(len, lines)) <= 100, card


async def test_inlay_hints_and_code_lenses(client: RecordingClient) -> None:
    await initialize(client)
    uri, text = open_fixture(client, "kernels.cu")
    await diagnostics_for(client, uri, 1)
    hints = await inlay_hints(client, uri)
    assert len(hints) == 2
    sig_line = text.splitlines()[position_of(text, "scale_add(").line]
    first = hints[0]
    assert isinstance(first.label, str)
    assert first.label.startswith("bandwidth-bound · ") and "AI" in first.label
    assert len(first.label) <= 43  # whole within VS Code's default inlay hint length
    # after the closing parenthesis of the parameter list (UTF-16 column)
    close = sig_line.index(")") + 1
    assert first.position.line == position_of(text, "scale_add(").line
    assert first.position.character == len(sig_line[:close].encode("utf-16-le")) // 2

    lenses = await code_lenses(client, uri)
    titles = [lens.command.title for lens in lenses if lens.command]
    assert any("bandwidth-bound on H100" in t for t in titles), titles
    select = [
        lens for lens in lenses if lens.command and lens.command.command == "roofline.selectGpu"
    ]
    assert len(select) == 2
    explain = [
        lens for lens in lenses if lens.command and lens.command.command == "roofline.explainKernel"
    ]
    assert explain and explain[0].command is not None
    md = await command(client, "roofline.explainKernel", *(explain[0].command.arguments or []))
    assert isinstance(md, str) and "`scale_add`" in md and "RL001" in md


# --------------------------------------------------------------------------------------------
# diagnostics and quick fixes
# --------------------------------------------------------------------------------------------


async def test_diagnostics_carry_code_link_and_utf16_range(client: RecordingClient) -> None:
    await initialize(client)
    uri, text = open_fixture(client, "kernels.cu")
    diags = await diagnostics_for(client, uri, 1)
    assert diags and all(d.source == "roofline" for d in diags)
    assert all(d.severity in (INFO, HINT) for d in diags)
    lit = [d for d in diags if d.code == "RL001"]
    assert len(lit) == 1
    start = position_of(text, "0.5)")
    assert lit[0].range.start == start
    assert lit[0].range.end == lsp.Position(start.line, start.character + 3)
    assert lit[0].code_description is not None
    assert lit[0].code_description.href.endswith("#rl001-fp64-literal")
    codes = {d.code for d in diags}
    assert {"RL001", "RL003"} <= codes, codes
    assert "RL007" not in codes  # scale_add loads before its only store: nothing reloaded


@pytest.mark.parametrize(
    ("fixture", "code", "before", "after"),
    [
        ("kernels.cu", "RL001", "x[i] + 0.5)", "x[i] + 0.5f)"),
        ("kernels.cu", "RL003", "pow(in[i], 2);", "in[i] * in[i];"),
        (
            "../advice/rl007_restrict.cu",
            "RL007",
            "correlate(int n, int m, const float *w, const float *in, float *out)",
            "correlate(int n, int m, const float *__restrict__ w, const float *__restrict__ in, "
            "float *__restrict__ out)",
        ),
        (
            "offload.cpp",
            "RL011",
            "map(tofrom: in[0:n], out[0:n])",
            "map(tofrom: out[0:n]) map(to: in[0:n])",
        ),
    ],
)
async def test_quick_fix_applies_and_clears_its_diagnostic(
    client: RecordingClient, fixture: str, code: str, before: str, after: str
) -> None:
    await initialize(client)
    language = "cpp" if fixture.endswith(".cpp") else "cuda-cpp"
    uri, text = open_fixture(client, fixture, language)
    diags = [d for d in await diagnostics_for(client, uri, 1) if d.code == code]
    assert diags, f"no {code} diagnostic"
    span = _span(text, before)
    target = next(d for d in diags if span[0] <= _pos(d.range.start) <= span[1])
    actions = await code_actions(client, uri, target.range, [target])
    fixes = [a for a in actions if a.kind == lsp.CodeActionKind.QuickFix]
    assert fixes, actions
    new_text = apply_edits(text, edits_of(fixes[0], uri))
    assert after in new_text and before not in new_text.replace(after, "")
    # the editor sends the fixed text; the diagnostic of that rule goes away there
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=new_text)],
        )
    )
    fixed = await diagnostics_for(client, uri, 2)
    fixed_span = _span(new_text, after)
    assert not [
        d for d in fixed if d.code == code and fixed_span[0] <= _pos(d.range.start) <= fixed_span[1]
    ], fixed


def _pos(p: lsp.Position) -> tuple[int, int]:
    return (p.line, p.character)


def _span(text: str, needle: str) -> tuple[tuple[int, int], tuple[int, int]]:
    start = position_of(text, needle)
    return (start.line, start.character), (start.line, start.character + len(needle))


# --------------------------------------------------------------------------------------------
# edits: add, rename, delete kernels (incremental sync)
# --------------------------------------------------------------------------------------------


async def test_edits_add_rename_and_delete_kernels(client: RecordingClient) -> None:
    await initialize(client)
    uri, text = open_fixture(client, "kernels.cu")
    await diagnostics_for(client, uri, 1)
    assert len(await inlay_hints(client, uri)) == 2

    # add a kernel after the includes, on a line with non-ASCII text before it
    at = position_of(text, "/* 🚀 streams */")
    added = "/* ñ */ __global__ void twice(float *z) { z[threadIdx.x] *= 2.0f; }\n"
    change(client, uri, 2, (at.line, 0), (at.line, 0), added)
    await diagnostics_for(client, uri, 2)
    text = (
        added.join([text.split("\n", at.line)[0] + "\n" * 0, ""])
        if False
        else (
            "\n".join(text.split("\n")[: at.line])
            + "\n"
            + added
            + "\n".join(text.split("\n")[at.line :])
        )
    )
    hints = await inlay_hints(client, uri)
    assert len(hints) == 3
    card = hover_text(await hover(client, uri, position_of(text, "twice(")))
    assert "`twice`" in card

    # rename scale_add -> scale_add_renamed (an edit inside the kernel's name)
    name = position_of(text, "scale_add(")
    end = lsp.Position(name.line, name.character + len("scale_add"))
    change(client, uri, 3, (name.line, name.character), (end.line, end.character), "saxpy_like")
    text = text.replace("scale_add(", "saxpy_like(", 1)
    await diagnostics_for(client, uri, 3)
    renamed = hover_text(await hover(client, uri, position_of(text, "saxpy_like(")))
    assert "`saxpy_like`" in renamed
    titles = [lens.command.title for lens in await code_lenses(client, uri) if lens.command]
    assert len([t for t in titles if t.startswith("roofline:")]) == 3

    # delete square_all entirely (several lines)
    first = position_of(text, "__global__ void square_all")
    last = position_of(text, "int main()")
    change(client, uri, 4, (first.line, 0), (last.line, 0), "")
    lines = text.split("\n")
    text = "\n".join(lines[: first.line] + lines[last.line :])
    diags = await diagnostics_for(client, uri, 4)
    assert not [d for d in diags if d.code == "RL003"]  # the pow() was in square_all
    assert len(await inlay_hints(client, uri)) == 2
    assert await hover(client, uri, position_of(text, "int main")) is None


async def test_hover_between_edit_and_analysis_maps_through_the_edit(
    client: RecordingClient,
) -> None:
    # A long debounce: hover answers from the previous analysis, mapped through the edit.
    await initialize(client, {"debounceMs": 2000})
    uri, text = open_fixture(client, "kernels.cu")
    await diagnostics_for(client, uri, 1)
    change(client, uri, 2, (0, 0), (0, 0), "// first\n")  # analysed at once (after a pause)
    added = "// a new line pushes every kernel down\n" * 3
    change(client, uri, 3, (0, 0), (0, 0), added)  # debounced: 2 s
    text = added + "// first\n" + text
    card = hover_text(await hover(client, uri, position_of(text, "square_all(")))
    assert "`square_all`" in card
    hints = await inlay_hints(client, uri)
    assert [h.position.line for h in hints] == [
        position_of(text, "scale_add(").line,
        position_of(text, "square_all(").line,
    ]


async def test_the_first_edit_after_a_pause_is_analysed_at_once_a_burst_after_it(
    client: RecordingClient,
) -> None:
    await initialize(client, {"debounceMs": 3000})
    uri, _ = open_fixture(client, "kernels.cu")
    await diagnostics_for(client, uri, 1)
    since = len(client.published)
    change(client, uri, 2, (0, 0), (0, 0), "// one\n")
    await diagnostics_for(client, uri, 2, timeout=2, since=since)  # not after 3 s
    change(client, uri, 3, (0, 0), (0, 0), "// two\n")  # within the debounce time
    await asyncio.sleep(1)
    assert not any(p.version == 3 for p in client.published[since:])
    await diagnostics_for(client, uri, 3, timeout=10, since=since)


# --------------------------------------------------------------------------------------------
# configuration
# --------------------------------------------------------------------------------------------


async def test_no_options_and_null_configuration_give_defaults(client: RecordingClient) -> None:
    client.set_configuration(None, section="roofline")  # the client answers null
    await initialize(client, None)
    uri, text = open_fixture(client, "kernels.cu")
    await diagnostics_for(client, uri, 1)
    card = hover_text(await hover(client, uri, position_of(text, "scale_add(")))
    assert "H100-SXM5-80GB" in card  # the default target GPU
    assert not client.messages


async def test_configuration_change_flips_fp64_verdict(client: RecordingClient) -> None:
    await initialize(client, {"gpu": "h100"})
    uri, text = open_fixture(client, "fp64_flip.cu")
    await diagnostics_for(client, uri, 1)
    at = position_of(text, "horner64(")
    assert "**bandwidth-bound** on **H100" in hover_text(await hover(client, uri, at))

    client.set_configuration({"gpu": "rtx-3080"}, section="roofline")
    since = len(client.published)
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=None))
    await diagnostics_for(client, uri, 1, since=since)
    card = hover_text(await hover(client, uri, at))
    assert "**compute-bound** on **RTX-3080**" in card and "fp64" in card
    hints = await inlay_hints(client, uri)
    assert isinstance(hints[0].label, str) and hints[0].label.startswith("compute-bound")
    for _ in range(50):
        if client.refreshes["inlayHint"] and client.refreshes["codeLens"]:
            break
        await asyncio.sleep(0.05)
    assert client.refreshes["inlayHint"] >= 1 and client.refreshes["codeLens"] >= 1


async def test_compare_gpus_show_where_the_verdict_differs(client: RecordingClient) -> None:
    await initialize(client, {"gpu": "h100", "compareGpus": ["rtx-3080", "a100"]})
    uri, text = open_fixture(client, "fp64_flip.cu")
    await diagnostics_for(client, uri, 1)
    card = hover_text(await hover(client, uri, position_of(text, "horner64(")))
    assert "compute-bound on RTX-3080: fp64" in card
    assert "on A100" not in card  # same verdict as the target: not repeated


async def test_invalid_setting_shows_one_message_and_keeps_last_good_value(
    client: RecordingClient,
) -> None:
    client.set_configuration({"gpu": "rtx-3080"}, section="roofline")
    await initialize(client)
    uri, text = open_fixture(client, "kernels.cu")
    await diagnostics_for(client, uri, 1)
    at = position_of(text, "scale_add(")
    assert "RTX-3080" in hover_text(await hover(client, uri, at))

    client.set_configuration({"gpu": "not-a-gpu", "debounceMs": "soon"}, section="roofline")
    for _ in range(2):  # the same invalid settings twice: still one message per key
        client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=None))
        await asyncio.sleep(0.3)
    gpu_msgs = [m for m in client.messages if "roofline.gpu" in m.message]
    deb_msgs = [m for m in client.messages if "roofline.debounceMs" in m.message]
    assert len(gpu_msgs) == 1 and len(deb_msgs) == 1, client.messages
    assert "not-a-gpu" in gpu_msgs[0].message
    assert "RTX-3080" in hover_text(await hover(client, uri, at))  # the last good value


async def test_settings_pushed_by_a_client_without_workspace_configuration(
    client: RecordingClient,
) -> None:
    await initialize(client, {"gpu": "a100"}, configuration=False)
    uri, text = open_fixture(client, "kernels.cu")
    await diagnostics_for(client, uri, 1)
    at = position_of(text, "scale_add(")
    assert "A100-SXM4-80GB" in hover_text(await hover(client, uri, at))
    since = len(client.published)
    client.workspace_did_change_configuration(
        lsp.DidChangeConfigurationParams(settings={"roofline": {"gpu": "mi300x"}})
    )
    await diagnostics_for(client, uri, 1, since=since)
    assert "MI300X" in hover_text(await hover(client, uri, at))


async def test_per_glob_override(client: RecordingClient) -> None:
    await initialize(client, {"gpu": "h100", "overrides": [{"files": "*.cpp", "gpu": "mi250x"}]})
    cu, cu_text = open_fixture(client, "kernels.cu")
    cpp, cpp_text = open_fixture(client, "offload.cpp", "cpp")
    await diagnostics_for(client, cu, 1)
    await diagnostics_for(client, cpp, 1)
    assert "H100" in hover_text(await hover(client, cu, position_of(cu_text, "scale_add(")))
    assert "MI250X" in hover_text(await hover(client, cpp, position_of(cpp_text, "#pragma omp")))


# --------------------------------------------------------------------------------------------
# commands
# --------------------------------------------------------------------------------------------


async def test_commands_list_select_reanalyze_report(client: RecordingClient) -> None:
    result = await initialize(client)
    assert result.capabilities.execute_command_provider is not None
    registered = set(result.capabilities.execute_command_provider.commands)
    assert {
        "roofline.listGpus",
        "roofline.selectGpu",
        "roofline.reanalyze",
        "roofline.report",
        "roofline.explainKernel",
    } <= registered
    uri, text = open_fixture(client, "kernels.cu")
    await diagnostics_for(client, uri, 1)
    at = position_of(text, "scale_add(")

    gpus = await command(client, "roofline.listGpus")
    assert isinstance(gpus, list) and any(g["name"] == "RTX-4090" for g in gpus)
    assert all("ridges" in g or "peaks" in g for g in gpus)

    assert await command(client, "roofline.selectGpu", "4090") == "RTX-4090"
    for _ in range(100):
        if "RTX-4090" in hover_text(await hover(client, uri, at)):
            break
        await asyncio.sleep(0.05)
    assert "RTX-4090" in hover_text(await hover(client, uri, at))

    # no argument: the server asks the user with window/showMessageRequest
    client.message_request_answer = "MI300X"
    assert await command(client, "roofline.selectGpu") == "MI300X"
    assert client.message_requests and any(
        a.title == "H100-SXM5-80GB" for a in client.message_requests[0].actions or []
    )

    assert await command(client, "roofline.selectGpu", "no-such-gpu") is None
    assert [m for m in client.messages if "no-such-gpu" in m.message]

    assert await command(client, "roofline.reanalyze") == 1
    assert any(
        any(isinstance(v, lsp.WorkDoneProgressEnd) for v in values)
        for values in client.progress_reports.values()
    )
    assert "MI300X" in hover_text(await hover(client, uri, at))

    report = await command(client, "roofline.report", uri)
    assert isinstance(report, str)
    assert report.startswith("# Roofline report: kernels.cu")
    assert "`scale_add`" in report and "`square_all`" in report and "MI300X" in report
    assert "RL001" in report


# --------------------------------------------------------------------------------------------
# robustness
# --------------------------------------------------------------------------------------------


async def test_unknown_uris_malformed_requests_and_positions_past_the_end(
    client: RecordingClient,
) -> None:
    await initialize(client)
    uri, text = open_fixture(client, "kernels.cu")
    await diagnostics_for(client, uri, 1)
    nowhere = uri_of("not-open.cu")
    assert await hover(client, nowhere, lsp.Position(0, 0)) is None
    assert await inlay_hints(client, nowhere) == []
    assert await code_lenses(client, nowhere) == []
    # positions past the end of a line and of the document
    assert await hover(client, uri, lsp.Position(10_000, 0)) is None
    past = lsp.Position(position_of(text, "scale_add(").line, 10_000)
    await hover(client, uri, past)  # answers (a card or nothing), no error
    # a change and a close for documents that were never opened
    change(client, nowhere, 2, (0, 0), (0, 0), "x")
    client.text_document_did_close(
        lsp.DidCloseTextDocumentParams(lsp.TextDocumentIdentifier(uri=nowhere))
    )
    # malformed messages written straight to the server's stdin: it answers errors, lives on
    for body in (
        b'{"jsonrpc":"2.0","id":9001,"method":"textDocument/hover","params":{"bogus":true}}',
        b"{this is not json",
        b'{"jsonrpc":"2.0","id":9002,"method":"textDocument/hover","params":'
        b'{"textDocument":{"uri":"' + uri.encode() + b'"},"position":{"line":-5,"character":"a"}}}',
        b'{"jsonrpc":"2.0","id":9003,"method":"roofline/noSuchMethod","params":{}}',
        b'{"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{}}}',
    ):
        send_raw(client, body)
    with pytest.raises(Exception):  # noqa: B017
        await command(client, "roofline.report", 42)
    with pytest.raises(Exception):  # noqa: B017
        await command(client, "roofline.noSuchCommand")
    assert "`scale_add`" in hover_text(await hover(client, uri, position_of(text, "scale_add(")))


async def test_huge_document_is_declined_with_one_message(client: RecordingClient) -> None:
    await initialize(client)
    big = "__global__ void k(float *x) { x[threadIdx.x] = 1.0f; }\n" + ("// filler\n" * 2_000_000)
    assert len(big.encode()) > 20_000_000
    huge = uri_of("huge.cu")
    open_text(client, huge, big)
    uri, text = open_fixture(client, "kernels.cu")
    await diagnostics_for(client, uri, 1)
    for _ in range(100):
        if client.messages:
            break
        await asyncio.sleep(0.05)
    declined = [m for m in client.messages if "huge.cu" in m.message]
    assert len(declined) == 1 and "not analysed" in declined[0].message
    assert await hover(client, huge, lsp.Position(0, 17)) is None
    change(client, huge, 2, (1, 0), (1, 0), "// one more line\n")  # still too large: silent
    t0 = asyncio.get_running_loop().time()
    assert "`scale_add`" in hover_text(await hover(client, uri, position_of(text, "scale_add(")))
    assert asyncio.get_running_loop().time() - t0 < 5
    await asyncio.sleep(0.3)
    assert len([m for m in client.messages if "huge.cu" in m.message]) == 1


async def test_invalid_utf8_file_keeps_working(client: RecordingClient) -> None:
    await initialize(client)
    raw = (
        b"// Latin-1 comment: caf\xe9 \xff\xfe\n"
        b"__global__ void bad_bytes(int n, float *x, float *y) {\n"
        b"    int i = blockIdx.x * blockDim.x + threadIdx.x; /* \xe9\xe9 */\n"
        b"    /* \xff */ if (i < n) y[i] = x[i] * (x[i] + 3.0);\n"
        b"}\n"
    )
    text = raw.decode("utf-8", "replace")  # what an editor sends for such a file
    uri = uri_of("invalid_utf8.cu")
    open_text(client, uri, text)
    diags = await diagnostics_for(client, uri, 1)
    lit = [d for d in diags if d.code == "RL001"]
    assert lit and lit[0].range.start == position_of(text, "3.0)")
    assert "`bad_bytes`" in hover_text(await hover(client, uri, position_of(text, "bad_bytes")))


async def test_file_without_kernels_costs_nothing(client: RecordingClient) -> None:
    await initialize(client)
    plain, _ = open_fixture(client, "no_kernels.cpp", "cpp")
    uri, _ = open_fixture(client, "kernels.cu")
    await diagnostics_for(client, uri, 1)
    assert not [p for p in client.published if p.uri == plain]
    assert await hover(client, plain, lsp.Position(4, 10)) is None
    report = await command(client, "roofline.report", plain)
    assert isinstance(report, str) and "no gpu kernel" in report.lower()


async def test_measured_profile_overrides_the_estimate(client: RecordingClient) -> None:
    profile = str(FIXTURES / "scale_add_profile.csv")
    await initialize(client, {"profile": profile})
    uri, text = open_fixture(client, "kernels.cu")
    await diagnostics_for(client, uri, 1)
    card = hover_text(await hover(client, uri, position_of(text, "scale_add(")))
    assert "**compute-bound**" in card and "measured profile" in card
    other = hover_text(await hover(client, uri, position_of(text, "square_all(")))
    assert "(static, " in other  # not in the profile: the estimate stays

    # a profile path that does not exist: one message naming the key, the last good one kept
    client.set_configuration({"profile": str(FIXTURES / "missing.csv")}, section="roofline")
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=None))
    for _ in range(100):
        if any("roofline.profile" in m.message for m in client.messages):
            break
        await asyncio.sleep(0.05)
    assert [m for m in client.messages if "roofline.profile" in m.message]
    card = hover_text(await hover(client, uri, position_of(text, "scale_add(")))
    assert "measured profile" in card


# --------------------------------------------------------------------------------------------
# exit
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shutdown_first", [True, False])
def test_exit_ends_the_process_with_the_protocol_s_code(shutdown_first: bool) -> None:
    # exit after shutdown: 0; exit without it: 1 (LSP). The process ends by itself, with an
    # analysis just started (a document opened right before) cancelled, not awaited.
    server = RawServer(SERVER_COMMAND)
    try:
        server.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        server.notify("initialized", {})
        text = (FIXTURES / "kernels.cu").read_text(encoding="utf-8")
        server.notify(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": uri_of("kernels.cu"),
                    "languageId": "cuda-cpp",
                    "version": 1,
                    "text": text,
                }
            },
        )
        if shutdown_first:
            assert server.request("shutdown", None, timeout=10) is None
        server.notify("exit", None)
        assert server.proc.wait(timeout=10) == (0 if shutdown_first else 1)
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait()
