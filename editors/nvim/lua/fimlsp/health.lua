-- `:checkhealth fimlsp`: is the server command found, does the server answer, does the model load?
--
-- It asks the running fimlsp client where there is one; else it starts the configured server once, with the
-- configured settings, initializes it, asks `fimlsp.modelStatus` and stops it.

local M = {}

local SERVER_SECONDS = 60 -- to start and answer `initialize` (Python's imports on a busy machine)
local MODEL_SECONDS = 120 -- to load the model (a hub model may first download)

-- Neovim 0.10+ has vim.health.start/ok/…, 0.8-0.9 vim.health.report_*, 0.7 only the Vimscript health#report_*.
local function reporter(name)
  local health = vim.health or {}
  return health[name] or health["report_" .. name] or function(...)
    vim.fn["health#report_" .. name](...)
  end
end

local report = {
  start = reporter("start"), ok = reporter("ok"), info = reporter("info"), warn = reporter("warn"),
  error = reporter("error"),
}

-- JSON's null arrives as vim.NIL or nil, depending on the Neovim version.
local function present(value)
  return value ~= nil and value ~= vim.NIL
end

-- A client's method: Neovim 0.11 made them methods (client:stop()), before they were closures (client.stop()).
local function call(client, method, ...)
  if vim.fn.has("nvim-0.11") == 1 then
    return client[method](client, ...)
  end
  return client[method](...)
end

local function running_client()
  local clients = (vim.lsp.get_clients or vim.lsp.get_active_clients)()
  for _, client in ipairs(clients) do
    if client.name == "fimlsp" and not call(client, "is_stopped") then
      return client
    end
  end
  return nil
end

local function quiet() end

-- Starts the configured server apart from any buffer; returns the client, the initialize result, or an error.
local function start_server(config)
  local initialize_result, exit_code
  local settings = next(config.settings) and config.settings or vim.empty_dict()
  local client_id = vim.lsp.start_client({
    name = "fimlsp-health",
    cmd = config.cmd,
    init_options = settings,
    settings = { fimlsp = settings },
    on_init = function(_, result)
      initialize_result = result
    end,
    on_exit = function(code)
      exit_code = code
    end,
    handlers = {
      ["window/showMessage"] = quiet,
      ["window/logMessage"] = quiet,
      ["$/progress"] = quiet,
      ["fimlsp/status"] = quiet,
    },
  })
  if not client_id then
    return nil, nil, "Neovim could not start it"
  end
  vim.wait(SERVER_SECONDS * 1000, function()
    return initialize_result ~= nil or exit_code ~= nil
  end, 50)
  local client = vim.lsp.get_client_by_id(client_id)
  if initialize_result and client then
    return client, initialize_result, nil
  end
  if client then
    call(client, "stop", true)
  end
  if exit_code ~= nil then
    return nil, nil, ("it exited with status %d before answering `initialize` (see :FimlspLog)"):format(exit_code)
  end
  return nil, nil, ("no answer to `initialize` within %d s"):format(SERVER_SECONDS)
end

local function stop_server(client)
  call(client, "stop")
  if not vim.wait(5000, function() return call(client, "is_stopped") end, 50) then
    call(client, "stop", true)
  end
end

local function check_command(config)
  report.start("fimlsp: the server command")
  local command = config.cmd[1]
  local path = vim.fn.exepath(command)
  if path == "" then
    report.error(("`%s` (the first word of `cmd`) is not on Neovim's PATH"):format(command), {
      "Start nvim from the shell where fimlsp's virtual environment is activated (`. .venv/bin/activate`),",
      'or give the full path: require("fimlsp").setup({ cmd = { "/path/to/fimlsp/.venv/bin/fimlsp", "serve" } })',
    })
    return false
  end
  report.ok(("found `%s`: %s"):format(command, path))
  return true
end

local function check_model(client)
  local answer, problem = call(client, "request_sync", "workspace/executeCommand",
    { command = "fimlsp.modelStatus" }, MODEL_SECONDS * 1000)
  if not answer then
    report.warn(("the model's status did not come within %d s (%s); :FimlspStatus says when it is ready")
      :format(MODEL_SECONDS, problem or "the client stopped"))
  elseif answer.err then
    report.error("the server refused fimlsp.modelStatus: " .. tostring(answer.err.message or answer.err))
  elseif answer.result.ready and not present(answer.result.error) then
    report.ok(answer.result.message)
  elseif answer.result.ready then
    report.warn(answer.result.message, { "The model in the settings could not be loaded; the one before it serves." })
  else
    report.error(answer.result.message, {
      "Set `settings.model` to a model folder, a .gguf file (an absolute or ~ path) or a hub id, or leave it out",
      "for the model shipped with fimlsp.",
    })
  end
end

local function check_server(config)
  report.start("fimlsp: the server")
  local client = running_client()
  local started = false
  if client then
    report.ok(("a fimlsp client is running (id %d)"):format(client.id))
  else
    local result, problem
    client, result, problem = start_server(config)
    if not client then
      report.error(("`%s` does not answer: %s"):format(table.concat(config.cmd, " "), problem))
      return
    end
    started = true
    local server = result.serverInfo or {}
    report.ok(("`%s` answers: %s %s"):format(table.concat(config.cmd, " "), server.name or "?", server.version or ""))
  end
  check_model(client)
  if started then
    stop_server(client)
  end
end

function M.check()
  local fimlsp = require("fimlsp")
  report.start("fimlsp: setup")
  if fimlsp.configured then
    report.ok(("require(\"fimlsp\").setup() has run: the server starts for %s buffers")
      :format(table.concat(fimlsp.config.filetypes, ", ")))
  else
    report.warn("require(\"fimlsp\").setup() has not run: no server starts (the checks below use the defaults)",
      { "Call it in ~/.config/nvim/init.lua, or give lazy.nvim `opts`: see editors/nvim/README.md." })
  end
  if vim.lsp.inline_completion ~= nil and vim.lsp.inline_completion.enable ~= nil then
    report.info("ghost text: Neovim's own vim.lsp.inline_completion")
  else
    local version = vim.version()
    report.info(("ghost text: the plugin's own client (Neovim %d.%d.%d has no vim.lsp.inline_completion)")
      :format(version.major, version.minor, version.patch))
  end
  if check_command(fimlsp.config) then
    check_server(fimlsp.config)
  end
end

return M
