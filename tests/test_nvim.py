"""A real editor: headless Neovim with the plugin in `editors/nvim/` against `fimlsp serve` and the tiny model.

Neovim types into a Python buffer in insert mode (an assignment without its value, at a line end or before a
closing bracket); after the plugin's pause it asks the server for an inline completion and shows it as virtual
text; the test reads the text shown and the screen, accepts it with the accept key, and checks that the file
parses with it. Another run, with no model, reads `:FimlspStatus` and Neovim's LSP log. `:checkhealth fimlsp`
runs with the server found, not found, and with a model that does not load.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fimlsp.syntax_trees import parsed

PLUGIN = Path(__file__).resolve().parent.parent / "editors" / "nvim"
NVIM = shutil.which("nvim")

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    NVIM is None, reason="Neovim (`nvim`) is not installed: `apt-get install -y neovim` (CI's .ci/run installs it)")]

SOURCE = '''def area(width, height):
    return width * height


total = 0
for size in range(3):
    total += area(size, 2)
print(total)
'''

# Runs inside Neovim, driven by timers so that the editor's main loop handles keys, autocommands and the LSP;
# `finish` writes `result` to a JSON file. The scripts below continue it.
PRELUDE = r'''
local plugin, python, model, path, out = unpack(_G.fimlsp_test)
vim.opt.runtimepath:prepend(plugin)
local fimlsp = require("fimlsp")
local namespace = vim.api.nvim_create_namespace("fimlsp")
local result = {}

local function finish(error)
  result.error = error
  if error then
    result.mode_at_error = vim.api.nvim_get_mode().mode
    result.text_at_error = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  end
  local file = io.open(out, "w")
  file:write(vim.json.encode(result))
  file:close()
  vim.cmd("qa!")
end

local function buffer_text()
  return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
end

-- Call `step` once `ready()` holds, polling every 50 ms for at most `seconds`.
local function when(ready, seconds, what, step)
  local deadline = vim.loop.now() + seconds * 1000
  local function poll()
    local ok, value = pcall(ready)
    if not ok then return finish(tostring(value)) end
    if value then
      local done, error = pcall(step)
      if not done then finish(tostring(error)) end
    elseif vim.loop.now() > deadline then
      finish("timed out waiting for " .. what)
    else
      vim.defer_fn(poll, 50)
    end
  end
  vim.defer_fn(poll, 0)
end

local function keys(text)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(text, true, false, true), "t", false)
end

local function server_ready()
  for _, c in pairs(vim.lsp.buf_get_clients(0)) do
    if c.name == "fimlsp" and c.initialized then return true end
  end
  return false
end

-- The screen line that shows buffer line `row` (1-based), as drawn now.
local function screen_line(row)
  vim.cmd("redraw")
  local screen_row = vim.fn.screenpos(0, row, 1).row
  local cells = {}
  for column = 1, vim.o.columns do
    cells[#cells + 1] = vim.fn.screenstring(screen_row, column)
  end
  return (table.concat(cells):gsub("%s+$", ""))
end
'''

# Wait for the server, open a line below line 7 and type `total += ` in insert mode (or, with `_G.fimlsp_keys`,
# other keys), wait for the ghost text, read it and the screen, accept it with <Tab>.
SCRIPT = PRELUDE + r'''
vim.o.columns = 160
fimlsp.setup({
  cmd = { python, "-m", "fimlsp", "serve" },
  settings = { model = model, device = "cpu", maxTokens = 16, timeBudget = 30, singleLine = "always" },
  debounce_ms = 100,
})
vim.cmd("edit " .. vim.fn.fnameescape(path))
result.filetype = vim.bo.filetype

when(server_ready, 120, "the server to start", function()
  vim.api.nvim_win_set_cursor(0, { 7, 0 })
  keys(_G.fimlsp_keys or "ototal += ")
  when(function() return fimlsp.suggestion() ~= nil end, 120, "a suggestion", function()
    result.mode = vim.api.nvim_get_mode().mode
    result.suggestion = fimlsp.suggestion()
    result.marks = #vim.api.nvim_buf_get_extmarks(0, namespace, 0, -1, {})
    result.cursor = vim.api.nvim_win_get_cursor(0)
    result.before = buffer_text()
    result.screen = screen_line(result.cursor[1])
    result.status = vim.api.nvim_exec("FimlspStatus", true)
    keys("<Tab>")
    when(function() return buffer_text() ~= result.before end, 10, "the suggestion to be inserted", function()
      result.accepted = buffer_text()
      result.cursor_after = vim.api.nvim_win_get_cursor(0)
      finish(nil)
    end)
  end)
end)
'''

# With a model that does not exist: type, wait for the server's status, read `:FimlspStatus`, open `:FimlspLog`.
STATUS_SCRIPT = PRELUDE + r'''
vim.lsp.set_log_level("info")
fimlsp.setup({
  cmd = { python, "-m", "fimlsp", "serve" },
  settings = { model = model, device = "cpu", timeBudget = 30 },
  debounce_ms = 100,
})
vim.cmd("edit " .. vim.fn.fnameescape(path))
local function model_refused() return server_ready() and fimlsp.status():find("no model") end
when(model_refused, 120, "the server to start and refuse the model", function()
  result.before_request = vim.api.nvim_exec("FimlspStatus", true)
  vim.api.nvim_win_set_cursor(0, { 7, 0 })
  keys("ototal += ")
  when(function() return fimlsp.status():find("no suggestion") end, 60, "the server's status", function()
    result.status = vim.api.nvim_exec("FimlspStatus", true)
    vim.cmd("stopinsert")
    vim.cmd("FimlspLog")
    result.log_buffer = vim.api.nvim_buf_get_name(0)
    result.log_path = vim.lsp.get_log_path()
    finish(nil)
  end)
end)
'''


def run_neovim(tmp_path: Path, script: str, model: str, keys: str | None = None) -> dict:
    """Run `script` in headless Neovim on a copy of SOURCE, with its own LSP log; what it wrote to `result`."""
    source = tmp_path / "area.py"
    source.write_text(SOURCE)
    script_file = tmp_path / "run.lua"
    script_file.write_text(script)
    out = tmp_path / "result.json"
    arguments = [str(PLUGIN), sys.executable, model, str(source), str(out)]
    setup = "lua _G.fimlsp_test = " + "{" + ", ".join(json.dumps(argument) for argument in arguments) + "}"
    if keys is not None:
        setup += f"; _G.fimlsp_keys = {json.dumps(keys)}"
    homes = {name: str(tmp_path / name.lower()) for name in ("XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME")}
    process = subprocess.run(
        [NVIM, "--headless", "--clean", "-c", setup, "-c", f"luafile {script_file}"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env={**os.environ, **homes},
    )
    assert out.exists(), f"Neovim wrote no result (exit {process.returncode}): {process.stderr[-2000:]}"
    result = json.loads(out.read_text())
    assert result.get("error") is None, result
    return result


def test_neovim_shows_a_completion_that_makes_the_file_parse(tmp_path, tiny_model_path):
    result = run_neovim(tmp_path, SCRIPT, str(tiny_model_path))
    assert result["filetype"] == "python", result
    assert result["mode"].startswith("i"), result
    typed = result["before"]
    assert typed.split("\n")[7].strip() == "total +=" and not _parses(typed)
    suggestion = result["suggestion"]
    assert suggestion, f"no completion was shown: {result}"
    assert result["marks"] >= 1
    row, column = result["cursor"]
    lines = typed.split("\n")
    offset = sum(len(line) + 1 for line in lines[: row - 1]) + column
    assert _parses(typed[:offset] + suggestion + typed[offset:]), suggestion
    assert result["accepted"] == typed[:offset] + suggestion + typed[offset:]
    assert result["status"] == "fimlsp: suggestion: checked: the file compiles"


def test_neovim_shows_a_mid_line_suggestion_where_it_will_be_inserted(tmp_path, tiny_model_path):
    # The cursor before `)`: the empty middle does not parse, and the ghost text must not be drawn after the `)`.
    result = run_neovim(tmp_path, SCRIPT, str(tiny_model_path), keys="ototal += (2 * )<Left>")
    typed = result["before"]
    row, column = result["cursor"]
    line = typed.split("\n")[row - 1]
    assert line.strip() == "total += (2 * )" and line[column:] == ")", (line, column)
    suggestion = result["suggestion"]
    assert suggestion and "\n" not in suggestion
    accepted_line = line[:column] + suggestion + line[column:]
    assert result["screen"] == accepted_line.rstrip()  # drawn where <Tab> inserts it, the `)` after it
    accepted = typed.split("\n")
    accepted[row - 1] = accepted_line
    assert result["accepted"] == "\n".join(accepted) and _parses(result["accepted"])
    assert result["cursor_after"] == [row, column + len(suggestion.encode())]


def test_neovim_status_says_why_nothing_appears_and_the_log_keeps_levels(tmp_path):
    missing = tmp_path / "no-such-model"
    result = run_neovim(tmp_path, STATUS_SCRIPT, str(missing))
    # Before a request, the model's loading (the server's status with no uri) says what went wrong.
    assert result["before_request"] == f"fimlsp: no request yet; no model: model folder '{missing}' does not exist"
    assert result["status"] == f"fimlsp: no suggestion: no model: model folder '{missing}' does not exist"
    assert result["log_buffer"] == result["log_path"]
    log = Path(result["log_path"]).read_text()
    # The server's info lines arrive through window/logMessage as [INFO]; stderr, logged as [ERROR], has only errors.
    assert any(line.startswith("[INFO]") and "fimlsp: settings:" in line for line in log.splitlines()), log
    stderr_lines = [line for line in log.splitlines() if '"stderr"' in line]
    assert stderr_lines and all("does not exist" in line for line in stderr_lines), stderr_lines


# This interpreter's server, as a Lua list (JSON's strings are Lua's).
SERVER_COMMAND = "{ " + ", ".join(json.dumps(word) for word in (sys.executable, "-m", "fimlsp", "serve")) + " }"


def run_checkhealth(tmp_path: Path, setup: str, path: str | None = None) -> str:
    """The report of `:checkhealth fimlsp` after the Lua `setup` ran, with the plugin on the runtimepath."""
    report = tmp_path / "checkhealth.txt"
    plugin = f"lua vim.opt.runtimepath:prepend({json.dumps(str(PLUGIN))})"
    homes = {name: str(tmp_path / name.lower()) for name in ("XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME")}
    env = {**os.environ, **homes, **({"PATH": path} if path is not None else {})}
    process = subprocess.run(
        [NVIM, "--headless", "--clean", "-c", plugin, "-c", f"lua {setup}", "-c", "checkhealth fimlsp",
         "-c", f"w! {report}", "-c", "qa!"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env,
    )
    assert report.exists(), f"Neovim wrote no report (exit {process.returncode}): {process.stderr[-2000:]}"
    return report.read_text()


def test_checkhealth_finds_the_server_and_loads_the_model(tmp_path):
    from fimlsp import __version__

    report = run_checkhealth(tmp_path, f'require("fimlsp").setup({{ cmd = {SERVER_COMMAND} }})')
    assert "- OK: require(\"fimlsp\").setup() has run" in report, report
    assert f"- OK: found `{sys.executable}`" in report, report
    assert f"- OK: `{sys.executable} -m fimlsp serve` answers: fimlsp {__version__}" in report, report
    assert "- OK: model " in report and " ready in " in report, report
    assert "ERROR" not in report and "WARNING" not in report, report


def test_checkhealth_says_when_fimlsp_is_not_on_the_path(tmp_path):
    # Neovim started outside the virtual environment: the default command `fimlsp` is not found.
    report = run_checkhealth(tmp_path, 'require("fimlsp").setup({})', path="/usr/bin:/bin")
    assert "- ERROR: `fimlsp` (the first word of `cmd`) is not on Neovim's PATH" in report, report
    assert "virtual environment is activated" in report and "give the full path" in report, report
    assert "answers" not in report, report


def test_checkhealth_says_when_the_model_does_not_load(tmp_path):
    missing = tmp_path / "no-such-model"
    settings = f"{{ model = {json.dumps(str(missing))} }}"
    report = run_checkhealth(tmp_path, f'require("fimlsp").setup({{ cmd = {SERVER_COMMAND}, settings = {settings} }})')
    assert "answers: fimlsp" in report, report
    assert f"- ERROR: no model: model folder '{missing}' does not exist" in report, report


def _parses(text: str) -> bool:
    try:
        parsed(text)
    except SyntaxError:
        return False
    return True
