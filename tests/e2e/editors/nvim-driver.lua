-- nvim-driver.lua: drive Neovim (>= 0.11) headless against roofline-lsp.
--
-- Usage:
--   nvim --clean -l tests/e2e/editors/nvim-driver.lua FILE.cu
--
-- Configures the server the way a user's init.lua would (vim.lsp.config + vim.lsp.enable for
-- the c/cpp/cuda/hip filetypes; with ROOFLINE_E2E_CLANGD, clangd beside it for the same
-- filetypes), opens FILE and, from that fresh start with no edit, asks for inlay hints and
-- code lenses at once (the server answers them from its first analysis), waits for the
-- diagnostics, hovers a kernel's name and a line of its body, opens ROOFLINE_E2E_OMP (an
-- OpenMP file) and asks for its hints, and prints JSON lines on stdout:
--
--   {"event":"server","name":...,"command":[...],"serverInfo":{...}}
--   {"event":"first_hints","count":N,"labels":[...],"ms":T}   (requested right after open)
--   {"event":"lenses","count":N,"titles":[...]}
--   {"event":"displayed_hints","count":N}   (vim.lsp.inlay_hint.get: what the buffer shows)
--   {"event":"hover","symbol":...,"line":L,"character":C,"kind":...,"text":...}
--   {"event":"body_hover","line":L,"character":C,"kind":...,"text":...}
--   {"event":"omp_hints","count":N,"labels":[...]}
--   {"event":"clients","names":[...]}   (the servers attached to FILE)
--   {"event":"clangd_hover","text":...}   (with ROOFLINE_E2E_CLANGD: clangd's own hover)
--   {"event":"diagnostic","line":L,"character":C,"endLine":...,"source":...,"severity":...,
--    "code":...,"message":...}        (as published, 0-based positions)
--   {"event":"shown","line":L,"source":...,"message":...}   (vim.diagnostic.get, 0-based)
--   {"event":"exit","status":N,"ms":T}   (the server's exit code after shutdown + exit, null
--                                     if none; T: ms from stop() to the process's exit)
--   {"event":"done"}
--
-- Exits 0 when all of that arrived, 1 (with a one-line reason on stderr) otherwise.
--
-- Environment: ROOFLINE_LSP_COMMAND (shell words; default "roofline-lsp serve"),
-- ROOFLINE_E2E_SYMBOL (kernel to hover; default the first __global__ one),
-- ROOFLINE_E2E_TIMEOUT (total seconds; default 30), ROOFLINE_E2E_OMP (an OpenMP/OpenACC
-- source to open second; optional), ROOFLINE_E2E_CLANGD (clangd's path; optional).

local start = vim.uv.hrtime()
local timeout_s = tonumber(os.getenv('ROOFLINE_E2E_TIMEOUT') or '') or 30

local function elapsed()
  return (vim.uv.hrtime() - start) / 1e9
end

local function remaining_ms()
  return math.max(0, math.floor((timeout_s - elapsed()) * 1000))
end

local function emit(tbl)
  io.stdout:write(vim.json.encode(tbl), '\n')
  io.stdout:flush()
end

local function log(fmt, ...)
  io.stderr:write(string.format('[nvim-driver %5.1fs] ', elapsed()), string.format(fmt, ...), '\n')
end

local client_id = nil
local exited = nil -- set by on_exit: the server process is gone
local exit_code = nil

local function fail(fmt, ...)
  local reason = string.format(fmt, ...)
  emit({ event = 'error', message = reason })
  io.stderr:write('nvim-driver: FAILED: ', reason, '\n')
  local logfile = vim.lsp.log.get_filename()
  if logfile and vim.uv.fs_stat(logfile) then
    local lines = vim.fn.readfile(logfile)
    io.stderr:write('---- tail of ', logfile, ' ----\n')
    for i = math.max(1, #lines - 40), #lines do
      io.stderr:write(lines[i], '\n')
    end
  end
  os.exit(1)
end

local function wait_until(what, pred)
  local result
  local ok = vim.wait(remaining_ms(), function()
    if exited then
      fail('the language server exited (%s) while waiting for %s', exited, what)
    end
    if client_id then
      local c = vim.lsp.get_client_by_id(client_id)
      if c == nil or (c.is_stopped and c:is_stopped()) then
        fail('the language server exited while waiting for %s', what)
      end
    end
    result = pred()
    return result ~= nil and result ~= false
  end, 50)
  if not ok then
    fail('timed out after %ss waiting for %s', timeout_s, what)
  end
  return result
end

local function split_words(s)
  -- Shell-like words: whitespace-separated, single or double quotes group.
  local words, cur, quote = {}, nil, nil
  for ch in s:gmatch('.') do
    if quote then
      if ch == quote then
        quote = nil
      else
        cur = (cur or '') .. ch
      end
    elseif ch == '"' or ch == "'" then
      quote = ch
      cur = cur or ''
    elseif ch:match('%s') then
      if cur then
        table.insert(words, cur)
        cur = nil
      end
    else
      cur = (cur or '') .. ch
    end
  end
  if cur then
    table.insert(words, cur)
  end
  return words
end

local file = _G.arg and _G.arg[1]
if not file or file == '' then
  fail('usage: nvim --clean -l nvim-driver.lua FILE')
end
if vim.fn.filereadable(file) ~= 1 then
  fail('cannot read %s', file)
end
if vim.fn.has('nvim-0.11') ~= 1 then
  fail('need Neovim >= 0.11 (vim.lsp.config), this is %s', tostring(vim.version()))
end

local env_cmd = os.getenv('ROOFLINE_LSP_COMMAND')
local cmd = (env_cmd and env_cmd:match('%S')) and split_words(env_cmd) or { 'roofline-lsp', 'serve' }
if vim.fn.executable(cmd[1]) ~= 1 then
  fail('language server %q not found on PATH', cmd[1])
end
log('server command: %s', table.concat(cmd, ' '))

-- Record publishDiagnostics as sent, then let Neovim's own handler show them.
local published = {}
local default_publish = vim.lsp.handlers['textDocument/publishDiagnostics']
vim.lsp.handlers['textDocument/publishDiagnostics'] = function(err, result, ctx, config)
  local from = vim.lsp.get_client_by_id(ctx.client_id)
  if result and result.uri and from and from.name == 'roofline' then
    published[result.uri] = result.diagnostics
  end
  return default_publish(err, result, ctx, config)
end

-- The user's configuration.
local stop_at = nil -- hrtime of client:stop(), for the exit time
local exit_ms = nil
vim.filetype.add({ extension = { hip = 'hip' } })
vim.lsp.config('roofline', {
  cmd = cmd,
  filetypes = { 'c', 'cpp', 'cuda', 'hip' },
  root_markers = { '.git', 'roofline.toml' },
  on_exit = function(code, signal)
    exited = string.format('exit code %s, signal %s', code, signal)
    exit_code = code
    if stop_at then
      exit_ms = (vim.uv.hrtime() - stop_at) / 1e6
    end
  end,
})
vim.lsp.enable('roofline')
local clangd = os.getenv('ROOFLINE_E2E_CLANGD')
if clangd == '' then
  clangd = nil
end
if clangd then
  -- clangd beside it: completion and navigation from clangd, the roofline from roofline-lsp
  vim.lsp.config('clangd', {
    cmd = { clangd, '--log=error' },
    filetypes = { 'c', 'cpp', 'cuda', 'hip' },
    root_markers = { 'compile_commands.json', '.git' },
  })
  vim.lsp.enable('clangd')
end

vim.cmd.edit(vim.fn.fnameescape(file))
local bufnr = vim.api.nvim_get_current_buf()
log('editing %s (filetype %s)', vim.api.nvim_buf_get_name(bufnr), vim.bo[bufnr].filetype)

local client = wait_until('the server to start and attach to the buffer', function()
  local clients = vim.lsp.get_clients({ bufnr = bufnr, name = 'roofline' })
  local c = clients[1]
  if c then
    client_id = c.id
  end
  return c and c.initialized and c
end)
if not client.server_capabilities.hoverProvider then
  fail('the server does not advertise hoverProvider')
end
emit({
  event = 'server',
  name = client.name,
  command = cmd,
  serverInfo = client.server_info or vim.NIL,
})

local uri = vim.uri_from_bufnr(bufnr)
local whole = {
  start = { line = 0, character = 0 },
  ['end'] = { line = vim.api.nvim_buf_line_count(bufnr), character = 0 },
}

local function request(method, params, buf)
  local resp = client:request_sync(method, params, remaining_ms(), buf or bufnr)
  if not resp or resp.err then
    fail('%s failed: %s', method, vim.inspect(resp))
  end
  return resp.result or {}
end

local function labels_of(hints)
  local out = {}
  for _, h in ipairs(hints) do
    local label = h.label
    if type(label) == 'table' then
      local parts = {}
      for _, p in ipairs(label) do
        table.insert(parts, p.value)
      end
      label = table.concat(parts)
    end
    table.insert(out, label)
  end
  return out
end

-- A fresh start, no edit: inlay hints and code lenses at once.
local t0 = vim.uv.hrtime()
local hints = request('textDocument/inlayHint', { textDocument = { uri = uri }, range = whole })
emit({
  event = 'first_hints',
  count = #hints,
  labels = labels_of(hints),
  ms = (vim.uv.hrtime() - t0) / 1e6,
})
local lenses = request('textDocument/codeLens', { textDocument = { uri = uri } })
local titles = {}
for _, l in ipairs(lenses) do
  table.insert(titles, l.command and l.command.title or vim.NIL)
end
emit({ event = 'lenses', count = #lenses, titles = titles })
-- What Neovim itself shows: its inlay hints, once enabled, after the server's refresh.
vim.lsp.inlay_hint.enable(true, { bufnr = bufnr })
local shown_hints = wait_until('Neovim to display the inlay hints', function()
  local got = vim.lsp.inlay_hint.get({ bufnr = bufnr })
  local mine = {}
  for _, h in ipairs(got) do
    if h.client_id == client.id then
      table.insert(mine, h)
    end
  end
  return #mine > 0 and mine
end)
emit({ event = 'displayed_hints', count = #shown_hints })
wait_until('publishDiagnostics with at least one diagnostic for the file', function()
  local d = published[uri]
  return d and #d > 0
end)

-- Hover on the kernel's name.
local symbol = os.getenv('ROOFLINE_E2E_SYMBOL')
if symbol == '' then
  symbol = nil
end
local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
local row, col
for i, line in ipairs(lines) do
  local s, e, name
  if symbol then
    s = line:find('__global__[^;{(]-[%s%*]' .. vim.pesc(symbol) .. '%s*%(')
    name = s and symbol
  else
    s, e, name = line:find('__global__[^;{(]-[%s%*]([%a_][%w_]*)%s*%(')
  end
  if s and name then
    local stop = line:find('%s*%(', s)
    row, col = i - 1, stop - #name - 1
    symbol = name
    break
  end
end
if not row then
  fail('no __global__ kernel %s in %s', symbol or '', file)
end
vim.api.nvim_win_set_cursor(0, { row + 1, col })
local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
local responses, err = vim.lsp.buf_request_sync(bufnr, 'textDocument/hover', params, remaining_ms())
if not responses then
  fail('hover request failed: %s', tostring(err))
end
local resp = responses[client.id]
if not resp or resp.err or not resp.result or not resp.result.contents then
  fail('empty hover on %s: %s', symbol, vim.inspect(resp))
end
local function hover_of(contents)
  if type(contents) == 'string' then
    return 'plaintext', contents
  elseif contents.kind then
    return contents.kind, contents.value
  elseif contents.value then
    return 'markedstring', contents.value
  end
  local parts = {}
  for _, c in ipairs(contents) do
    table.insert(parts, type(c) == 'string' and c or c.value)
  end
  return 'markedstring', table.concat(parts, '\n')
end
local kind, text = hover_of(resp.result.contents)
emit({
  event = 'hover',
  symbol = symbol,
  line = params.position.line,
  character = params.position.character,
  kind = kind,
  text = text,
})

-- Hover inside the body: the first line holding an assignment through an index.
local brow, bcol
for i = row + 2, #lines do
  local c = lines[i]:find('[%w_]+%[[^%]]*%]%s*=')
  if c then
    brow, bcol = i - 1, c - 1
    break
  end
end
if not brow then
  fail('no indexed assignment in the body of %s', symbol)
end
local bparams = {
  textDocument = { uri = uri },
  position = { line = brow, character = bcol },
}
local bresult = request('textDocument/hover', bparams)
local bkind, btext = vim.NIL, vim.NIL
if bresult.contents then
  bkind, btext = hover_of(bresult.contents)
end
emit({ event = 'body_hover', line = brow, character = bcol, kind = bkind, text = btext })

-- Every server on the buffer; clangd's own hover on the kernel's name.
local names = {}
for _, c in ipairs(vim.lsp.get_clients({ bufnr = bufnr })) do
  table.insert(names, c.name)
end
emit({ event = 'clients', names = names })
if clangd then
  local cl = wait_until('clangd to attach to the buffer', function()
    local c = vim.lsp.get_clients({ bufnr = bufnr, name = 'clangd' })[1]
    return c and c.initialized and c
  end)
  local cresp = cl:request_sync('textDocument/hover', params, remaining_ms(), bufnr)
  local ctext = vim.NIL
  if cresp and cresp.result and cresp.result.contents then
    local _, t = hover_of(cresp.result.contents)
    ctext = t
  end
  emit({ event = 'clangd_hover', text = ctext })
end

for _, d in ipairs(published[uri]) do
  emit({
    event = 'diagnostic',
    line = d.range.start.line,
    character = d.range.start.character,
    endLine = d.range['end'].line,
    endCharacter = d.range['end'].character,
    source = d.source or vim.NIL,
    severity = d.severity or vim.NIL,
    code = d.code or vim.NIL,
    message = d.message,
  })
end
-- What Neovim shows in the buffer.
local shown = wait_until('vim.diagnostic to show the diagnostics', function()
  local ds = vim.diagnostic.get(bufnr)
  return #ds > 0 and ds
end)
for _, d in ipairs(shown) do
  emit({ event = 'shown', line = d.lnum, source = d.source or vim.NIL, message = d.message })
end

-- An OpenMP file in the same session: its hints without an edit either.
local omp = os.getenv('ROOFLINE_E2E_OMP')
if omp and omp ~= '' then
  vim.cmd.edit(vim.fn.fnameescape(omp))
  local obuf = vim.api.nvim_get_current_buf()
  wait_until('the server to attach to the OpenMP file', function()
    return vim.lsp.buf_is_attached(obuf, client.id)
  end)
  local ohints = request('textDocument/inlayHint', {
    textDocument = { uri = vim.uri_from_bufnr(obuf) },
    range = {
      start = { line = 0, character = 0 },
      ['end'] = { line = vim.api.nvim_buf_line_count(obuf), character = 0 },
    },
  }, obuf)
  emit({ event = 'omp_hints', count = #ohints, labels = labels_of(ohints) })
end

-- Shutdown + exit, then the server's own exit code.
exited = nil
stop_at = vim.uv.hrtime()
client:stop()
vim.wait(5000, function()
  return exit_code ~= nil
end, 5)
emit({ event = 'exit', status = exit_code or vim.NIL, ms = exit_ms or vim.NIL })
for _, c in ipairs(vim.lsp.get_clients()) do
  c:stop(true)
end
emit({ event = 'done' })
log('done')
os.exit(0)
