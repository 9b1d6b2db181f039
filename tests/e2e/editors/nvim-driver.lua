-- nvim-driver.lua: drive Neovim (>= 0.11) headless against roofline-lsp.
--
-- Usage:
--   nvim --clean -l tests/e2e/editors/nvim-driver.lua FILE.cu
--
-- Configures the server the way a user's init.lua would (vim.lsp.config + vim.lsp.enable for
-- the cuda/cpp/c filetypes), opens FILE, waits for the server and its diagnostics, puts the
-- cursor on a kernel's name, asks for hover, and prints JSON lines on stdout:
--
--   {"event":"server","name":...,"command":[...],"serverInfo":{...}}
--   {"event":"hover","symbol":...,"line":L,"character":C,"kind":...,"text":...}
--   {"event":"diagnostic","line":L,"character":C,"endLine":...,"source":...,"severity":...,
--    "code":...,"message":...}        (as published, 0-based positions)
--   {"event":"shown","line":L,"source":...,"message":...}   (vim.diagnostic.get, 0-based)
--   {"event":"exit","status":N}   (the server's exit code after shutdown + exit; null if none)
--   {"event":"done"}
--
-- Exits 0 when all of that arrived, 1 (with a one-line reason on stderr) otherwise.
--
-- Environment: ROOFLINE_LSP_COMMAND (shell words; default "roofline-lsp serve"),
-- ROOFLINE_E2E_SYMBOL (kernel to hover; default the first __global__ one),
-- ROOFLINE_E2E_TIMEOUT (total seconds; default 30).

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
  if result and result.uri then
    published[result.uri] = result.diagnostics
  end
  return default_publish(err, result, ctx, config)
end

-- The user's configuration.
vim.lsp.config('roofline', {
  cmd = cmd,
  filetypes = { 'cuda', 'cpp', 'c' },
  root_markers = { '.git', 'roofline.toml' },
  on_exit = function(code, signal)
    exited = string.format('exit code %s, signal %s', code, signal)
    exit_code = code
  end,
})
vim.lsp.enable('roofline')

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
local contents = resp.result.contents
local kind, text
if type(contents) == 'string' then
  kind, text = 'plaintext', contents
elseif contents.kind then
  kind, text = contents.kind, contents.value
elseif contents.value then
  kind, text = 'markedstring', contents.value
else
  local parts = {}
  for _, c in ipairs(contents) do
    table.insert(parts, type(c) == 'string' and c or c.value)
  end
  kind, text = 'markedstring', table.concat(parts, '\n')
end
emit({
  event = 'hover',
  symbol = symbol,
  line = params.position.line,
  character = params.position.character,
  kind = kind,
  text = text,
})

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

-- Shutdown + exit, then the server's own exit code.
exited = nil
client:stop()
vim.wait(5000, function()
  return exit_code ~= nil
end, 20)
emit({ event = 'exit', status = exit_code or vim.NIL })
emit({ event = 'done' })
log('done')
os.exit(0)
