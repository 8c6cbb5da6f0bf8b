-- fimlsp for Neovim: starts `fimlsp serve` for Python buffers and shows its inline completions.
--
-- Neovim 0.12+ has `vim.lsp.inline_completion`: the plugin enables it and maps the accept key to it.
-- Older versions (0.7+) get a small client: after a pause in insert mode it requests
-- `textDocument/inlineCompletion`, shows the first suggestion as virtual text where it will be inserted, and
-- inserts it on the accept key.
-- In both, `:FimlspStatus` says what came of the last request (the server's `fimlsp/status`), or before the first
-- one how the model's loading went (the same notification with no uri), and `:FimlspLog` opens Neovim's LSP log.
-- `:checkhealth fimlsp` (lua/fimlsp/health.lua) says whether the server is found and answers and the model loads.

local M = {}

local defaults = {
  cmd = { "fimlsp", "serve" }, -- the server command
  filetypes = { "python" },
  settings = {}, -- fimlsp settings: model, modelServer, device, singleLine, alternatives, cache, mode, maxTokens, topK, timeBudget, sizeBudget, scope, loopRepeats, inventedFinish, attempts, names, members, memberUsage, calls, searchBudget, context, contextExclude
  accept_key = "<Tab>", -- in insert mode; falls back to the key itself when nothing is shown
  debounce_ms = 300, -- pause in insert mode before a request (Neovim < 0.12)
  highlight = "Comment", -- the ghost text's highlight group (Neovim < 0.12)
}

M.config = vim.deepcopy(defaults)
M.configured = false -- setup() has run (for `:checkhealth fimlsp`)

local namespace = vim.api.nvim_create_namespace("fimlsp")
local client_id = nil
local timer = nil
local pending = nil -- { client = client, id = request id }
local shown = nil -- { bufnr, row, col, text, tick }
local status = "fimlsp: no request yet"
local model_status = nil -- the server's last word on loading the model, e.g. "model … ready in 9.3 s"

local function native()
  return vim.lsp.inline_completion ~= nil and vim.lsp.inline_completion.enable ~= nil
end

local function client()
  return client_id and vim.lsp.get_client_by_id(client_id) or nil
end

-- Ghost text (Neovim < 0.12) ------------------------------------------------------------------------------

local function clear()
  if shown and vim.api.nvim_buf_is_valid(shown.bufnr) then
    vim.api.nvim_buf_clear_namespace(shown.bufnr, namespace, 0, -1)
  end
  shown = nil
end

local function cancel_pending()
  if pending then
    pending.client.cancel_request(pending.id)
    pending = nil
  end
end

-- Draws the buffer as it will be once `text` is inserted at (row, col): the suggestion over the rest of the line
-- from the cursor, and that rest again after the suggestion's last line. An overlay, since inline virtual text
-- needs Neovim 0.10.
local function show(bufnr, row, col, text)
  clear()
  local lines = vim.split(text, "\n", { plain = true })
  local line = vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ""
  local rest = line:sub(col + 1)
  local ghost = M.config.highlight
  local first = { { lines[1], ghost } }
  if #lines == 1 then
    table.insert(first, { rest, "Normal" })
  else
    local hidden = vim.fn.strdisplaywidth(rest) - vim.fn.strdisplaywidth(lines[1])
    table.insert(first, { string.rep(" ", math.max(0, hidden)), "Normal" })
  end
  local opts = { virt_text = first, virt_text_pos = "overlay", hl_mode = "combine" }
  if #lines > 1 then
    opts.virt_lines = {}
    for i = 2, #lines do
      table.insert(opts.virt_lines, { { lines[i], ghost } })
    end
    table.insert(opts.virt_lines[#opts.virt_lines], { rest, "Normal" })
  end
  vim.api.nvim_buf_set_extmark(bufnr, namespace, row, col, opts)
  shown = { bufnr = bufnr, row = row, col = col, text = text, tick = vim.api.nvim_buf_get_changedtick(bufnr) }
end

--- Ask the server for an inline completion at the cursor now and show it (Neovim < 0.12).
function M.request()
  local c = client()
  local bufnr = vim.api.nvim_get_current_buf()
  if not c or not vim.lsp.buf_is_attached(bufnr, c.id) then
    return
  end
  cancel_pending()
  clear()
  local params = vim.lsp.util.make_position_params(0, c.offset_encoding)
  params.context = { triggerKind = 2 } -- Automatic
  local row, col = params.position.line, vim.api.nvim_win_get_cursor(0)[2]
  local tick = vim.api.nvim_buf_get_changedtick(bufnr)
  local ok, id = c.request("textDocument/inlineCompletion", params, function(err, result)
    pending = nil
    if err or not result then
      return
    end
    local items = result.items or result
    local item = items[1]
    if not item or type(item.insertText) ~= "string" or item.insertText == "" then
      return
    end
    local cursor = vim.api.nvim_win_get_cursor(0)
    if vim.api.nvim_get_current_buf() ~= bufnr or vim.api.nvim_buf_get_changedtick(bufnr) ~= tick
        or cursor[1] - 1 ~= row or cursor[2] ~= col then
      return -- the user moved on; a newer request is on its way
    end
    show(bufnr, row, col, item.insertText)
  end, bufnr)
  if ok then
    pending = { client = c, id = id }
  end
end

--- The suggestion shown now, or nil (Neovim < 0.12).
function M.suggestion()
  return shown and shown.text or nil
end

--- What came of the last request, e.g. "fimlsp: no suggestion: the 2 s time budget ran out …" (for a statusline);
--- before the first request, how the model's loading went.
function M.status()
  if status == "fimlsp: no request yet" and model_status then
    return status .. "; " .. model_status
  end
  return status
end

--- Open Neovim's LSP log, where the server's log lines are (any Neovim version; `:LspLog` needs nvim-lspconfig).
function M.open_log()
  vim.cmd("tabnew " .. vim.fn.fnameescape(vim.lsp.get_log_path()))
end

--- Insert the shown suggestion; returns false if there is none.
function M.accept()
  if native() then
    return vim.lsp.inline_completion.get() or false
  end
  local current = shown
  if not current or current.bufnr ~= vim.api.nvim_get_current_buf()
      or vim.api.nvim_buf_get_changedtick(current.bufnr) ~= current.tick then
    clear()
    return false
  end
  clear()
  local lines = vim.split(current.text, "\n", { plain = true })
  vim.api.nvim_buf_set_text(current.bufnr, current.row, current.col, current.row, current.col, lines)
  local last_row = current.row + #lines - 1
  local last_col = (#lines == 1 and current.col or 0) + #lines[#lines]
  vim.api.nvim_win_set_cursor(0, { last_row + 1, last_col })
  return true
end

local function schedule_request()
  cancel_pending()
  clear()
  if timer then
    timer:stop()
  else
    timer = vim.loop.new_timer()
  end
  timer:start(M.config.debounce_ms, 0, vim.schedule_wrap(function()
    if vim.api.nvim_get_mode().mode:sub(1, 1) == "i" then
      M.request()
    end
  end))
end

local function on_accept_key()
  if not M.accept() then
    local key = vim.api.nvim_replace_termcodes(M.config.accept_key, true, false, true)
    vim.api.nvim_feedkeys(key, "n", false)
  end
end

-- Attaching -----------------------------------------------------------------------------------------------

local function on_attach(c, bufnr)
  vim.keymap.set("i", M.config.accept_key, on_accept_key, { buffer = bufnr, desc = "fimlsp: accept suggestion" })
  if native() then
    vim.lsp.inline_completion.enable(true, { bufnr = bufnr, client_id = c.id })
    return
  end
  local group = vim.api.nvim_create_augroup("fimlsp_buffer_" .. bufnr, { clear = true })
  vim.api.nvim_create_autocmd({ "TextChangedI", "CursorMovedI" }, {
    group = group, buffer = bufnr, callback = schedule_request,
  })
  vim.api.nvim_create_autocmd({ "InsertLeave", "BufLeave" }, {
    group = group, buffer = bufnr, callback = function()
      cancel_pending()
      clear()
    end,
  })
end

local function client_config()
  -- An empty Lua table would be sent as a JSON array.
  local settings = next(M.config.settings) and M.config.settings or vim.empty_dict()
  return {
    name = "fimlsp",
    cmd = M.config.cmd,
    init_options = settings,
    settings = { fimlsp = settings },
    on_attach = on_attach,
    handlers = {
      ["fimlsp/status"] = function(_, result)
        if result.uri == nil or result.uri == vim.NIL then
          model_status = result.message
        else
          status = "fimlsp: " .. result.message
        end
      end,
    },
  }
end

local function attach(bufnr)
  if vim.lsp.start then -- Neovim 0.8+
    local config = client_config()
    config.root_dir = vim.fn.getcwd()
    client_id = vim.lsp.start(config, { bufnr = bufnr })
    return
  end
  if not client() then
    client_id = vim.lsp.start_client(client_config())
  end
  if client_id then
    vim.lsp.buf_attach_client(bufnr, client_id)
  end
end

--- Start the server for buffers of the configured file types. `opts` overrides `M.config`'s defaults.
function M.setup(opts)
  M.config = vim.tbl_deep_extend("force", vim.deepcopy(defaults), opts or {})
  M.configured = true
  vim.api.nvim_create_user_command("FimlspStatus", function()
    vim.api.nvim_echo({ { M.status() } }, false, {})
  end, { desc = "fimlsp: what came of the last request" })
  vim.api.nvim_create_user_command("FimlspLog", M.open_log, { desc = "fimlsp: open Neovim's LSP log" })
  local group = vim.api.nvim_create_augroup("fimlsp", { clear = true })
  vim.api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = M.config.filetypes,
    callback = function(args)
      attach(args.buf)
    end,
  })
  -- Buffers that were open before setup ran.
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and vim.tbl_contains(M.config.filetypes, vim.bo[bufnr].filetype) then
      attach(bufnr)
    end
  end
end

return M
