"""A real editor: headless Neovim with the plugin in `editors/nvim/` against `fimlsp serve` and the tiny model.

Neovim types into a Python buffer in insert mode (an assignment without its value); after the plugin's pause it asks the server for an inline
completion and shows it as virtual text; the test reads the text shown, accepts it with the accept key, and
checks that the file parses with it.
"""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PLUGIN = Path(__file__).resolve().parent.parent / "editors" / "nvim"
NVIM = shutil.which("nvim")

pytestmark = pytest.mark.skipif(
    NVIM is None, reason="Neovim (`nvim`) is not installed: `apt-get install -y neovim` (CI's .ci/run installs it)")

SOURCE = '''def area(width, height):
    return width * height


total = 0
for size in range(3):
    total += area(size, 2)
print(total)
'''

# Runs inside Neovim, driven by timers so that the editor's main loop handles keys, autocommands and the LSP:
# wait for the server, open a line below line 7 and type `total += ` in insert mode, wait for the ghost text, read it, accept it with <Tab>, and write what happened to a JSON file.
SCRIPT = r'''
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

fimlsp.setup({
  cmd = { python, "-m", "fimlsp", "serve" },
  settings = { model = model, device = "cpu", maxTokens = 16, timeBudget = 30, singleLine = "always" },
  debounce_ms = 100,
})
vim.cmd("edit " .. vim.fn.fnameescape(path))
result.filetype = vim.bo.filetype

when(function()
  for _, c in pairs(vim.lsp.buf_get_clients(0)) do
    if c.name == "fimlsp" and c.initialized then return true end
  end
  return false
end, 120, "the server to start", function()
  vim.api.nvim_win_set_cursor(0, { 7, 0 })
  keys("ototal += ")
  when(function() return fimlsp.suggestion() ~= nil end, 120, "a suggestion", function()
    result.mode = vim.api.nvim_get_mode().mode
    result.suggestion = fimlsp.suggestion()
    result.marks = #vim.api.nvim_buf_get_extmarks(0, namespace, 0, -1, {})
    result.cursor = vim.api.nvim_win_get_cursor(0)
    result.before = buffer_text()
    keys("<Tab>")
    when(function() return buffer_text() ~= result.before end, 10, "the suggestion to be inserted", function()
      result.accepted = buffer_text()
      finish(nil)
    end)
  end)
end)
'''


def test_neovim_shows_a_completion_that_makes_the_file_parse(tmp_path, tiny_model_path):
    source = tmp_path / "area.py"
    source.write_text(SOURCE)
    script = tmp_path / "run.lua"
    script.write_text(SCRIPT)
    out = tmp_path / "result.json"
    arguments = [str(PLUGIN), sys.executable, str(tiny_model_path), str(source), str(out)]
    setup = "lua _G.fimlsp_test = " + "{" + ", ".join(json.dumps(argument) for argument in arguments) + "}"
    process = subprocess.run(
        [NVIM, "--headless", "--clean", "-c", setup, "-c", f"luafile {script}"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert out.exists(), f"Neovim wrote no result (exit {process.returncode}): {process.stderr[-2000:]}"
    result = json.loads(out.read_text())
    assert result.get("error") is None, result
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


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True
