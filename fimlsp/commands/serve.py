"""Run the fimlsp language server: LSP over stdio (the default) or over TCP with --tcp HOST:PORT.

Completions come through the standard methods textDocument/inlineCompletion (ghost text) and
textDocument/completion. The options below are the server's starting settings; a client can change them with
initializationOptions and workspace/didChangeConfiguration. Log lines go to the client as window/logMessage
with their level (--log-level); stderr carries only errors, since clients show all of it as errors (Neovim logs
every stderr line as [ERROR]); stdout carries only the protocol.

With --tcp the server is one client's, as over stdio: a second connection while the first is open gets a
window/showMessage error and is closed (no client sees another's documents or answers), and the process exits
when the first client's connection ends; a new session is a new process.

Exit status: 0 after the client's shutdown and exit (or when the input ends), 1 after an exit without shutdown.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from fimlsp.cli import UserError
from fimlsp.decoding import options
from fimlsp.model.loading import DEVICE_CHOICES, DEVICES
from fimlsp.server.config import BOUNDS, SINGLE_LINE, Settings

DEFAULTS = Settings()  # the server's default settings are the command's

LOG_LEVELS = ("debug", "info", "warning", "error")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tcp", metavar="HOST:PORT",
                        help="listen on a TCP socket instead of stdio, for one client: a connection that comes "
                             "while it is connected is refused, and the server exits when it disconnects")
    parser.add_argument("--model", help="model folder, hub id, or .gguf file run by llama.cpp (default: the model "
                        "shipped with fimlsp), as for `fimlsp complete --model`; the setting model takes only an "
                        "absolute or ~ path or a hub id, never a path in the working directory")
    parser.add_argument("--device", help="torch device, e.g. cpu or cuda:0 (default: a GPU if present)")
    parser.add_argument("--model-server", metavar="URL",
                        help="run the model on the shared server at URL (see `fimlsp complete --server`); --model "
                             "then names the folder or .gguf file with its vocabulary (the setting modelServer)")
    options.add_arguments(parser, DEFAULTS.decoding_options(), only=("mode", "max_tokens", "size_budget"),
                          bounds=BOUNDS)
    parser.add_argument("--time-budget", type=BOUNDS["time_budget"].parse, default=DEFAULTS.time_budget,
                        metavar="SECONDS",
                        help="time per completion from the request's arrival, waiting included; when it runs out, "
                             "a shorter valid middle or none (default: %(default)g)")
    parser.add_argument("--single-line", choices=SINGLE_LINE, default=DEFAULTS.single_line,
                        help="single-line completions: auto is single-line for automatic triggers "
                             "(default: %(default)s)")
    parser.add_argument("--no-cache", dest="cache", action="store_false",
                        help="rebuild the constraint for every request and serve nothing from earlier suggestions")
    parser.add_argument("--log-level", choices=LOG_LEVELS, default="info",
                        help="lowest level of the log lines sent to the client (default: info)")


def parse_address(address: str) -> tuple[str, int]:
    host, separator, port = address.rpartition(":")
    if not separator or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UserError(f"--tcp expects HOST:PORT with a port from 1 to 65535, got {address!r}")
    return host, int(port)


def run(args: argparse.Namespace) -> int:
    if args.device is not None and not DEVICES.fullmatch(args.device):
        raise UserError(f"--device expects {DEVICE_CHOICES}, got {args.device!r}")
    if args.model_server is not None and not args.model_server.startswith(("http://", "https://")):
        raise UserError(f"--model-server expects an http:// or https:// URL, got {args.model_server!r}")
    address = parse_address(args.tcp) if args.tcp else None

    from fimlsp.server.server import build_server
    from fimlsp.server.transport import serve_stdio, serve_tcp

    errors = logging.StreamHandler(sys.stderr)
    errors.setLevel(logging.ERROR)
    logging.basicConfig(handlers=[errors], level=logging.WARNING, format="%(asctime)s %(name)s: %(message)s")
    logging.getLogger("fimlsp").setLevel(args.log_level.upper())
    settings = Settings(model=args.model, device=args.device, mode=args.mode, max_tokens=args.max_tokens,
                        time_budget=args.time_budget, single_line=args.single_line, cache=args.cache,
                        size_budget=args.size_budget, model_server=args.model_server)
    server = build_server(settings)
    if address is not None:
        return serve_tcp(server, *address)
    # The protocol owns stdout: anything else written to it (a library's print, a C extension's message) would
    # corrupt the stream, so file descriptor 1 and sys.stdout now lead to stderr.
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    return serve_stdio(server, sys.stdin.buffer, protocol_out)
