"""Run the fimlsp language server: LSP over stdio (the default) or over TCP with --tcp HOST:PORT.

Completions come through the standard methods textDocument/inlineCompletion (ghost text) and
textDocument/completion. The options below are the server's starting settings, one for each setting
(docs/settings.md); a client can change them with initializationOptions and workspace/didChangeConfiguration, and a
null value restores them. Log lines go to the client as window/logMessage
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

from fimlsp import settings
from fimlsp.cli import UserError
from fimlsp.server.config import Settings

SETTINGS = settings.offered_by("serve")  # a flag for every setting a client may send, and the log level


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tcp", metavar="HOST:PORT",
                        help="listen on a TCP socket instead of stdio, for one client: a connection that comes "
                             "while it is connected is refused, and the server exits when it disconnects")
    settings.add_flags(parser, SETTINGS, server=True)


def parse_address(address: str) -> tuple[str, int]:
    host, separator, port = address.rpartition(":")
    if not separator or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UserError(f"--tcp expects HOST:PORT with a port from 1 to 65535, got {address!r}")
    return host, int(port)


def run(args: argparse.Namespace) -> int:
    try:
        values = settings.given(args, SETTINGS)
    except ValueError as error:
        raise UserError(str(error)) from None
    log_level = values.pop("log_level")
    address = parse_address(args.tcp) if args.tcp else None

    from fimlsp.server.server import build_server
    from fimlsp.server.transport import serve_stdio, serve_tcp

    errors = logging.StreamHandler(sys.stderr)
    errors.setLevel(logging.ERROR)
    logging.basicConfig(handlers=[errors], level=logging.WARNING, format="%(asctime)s %(name)s: %(message)s")
    logging.getLogger("fimlsp").setLevel(log_level.upper())
    server = build_server(Settings(**values))
    if address is not None:
        return serve_tcp(server, *address)
    # The protocol owns stdout: anything else written to it (a library's print, a C extension's message) would
    # corrupt the stream, so file descriptor 1 and sys.stdout now lead to stderr.
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    return serve_stdio(server, sys.stdin.buffer, protocol_out)
