"""No setting and no document makes the server's work unbounded: settings out of their declared bounds are refused
(one warning each), and a 20 MB document costs its own requests no more than their budget, its edits next to
nothing, and other documents' requests no wait. Against a real `fimlsp serve` (`tests/rpc_client.py`)."""

from __future__ import annotations

import time

from tests.rpc_client import document_params, position_params
from tests.test_protocol import change, edit, served, shut_down
from tests.test_server import SOURCE

BUDGET = 2.0  # the default timeBudget, which these servers keep
MARGIN = 1.0  # what an answer may take past its budget
SMALL = "file:///work/small.py"
BIG = "file:///work/big.py"
WARNING = 2  # window/logMessage's MessageType.Warning


def answered_in_time(client, method: str, params: dict) -> dict:
    """The answer to a request, which must come within the budget and the margin from the moment it was sent."""
    return client.response(client.request(method, params), timeout=BUDGET + MARGIN)


def warnings(client) -> list[str]:
    return [params["message"] for params in client.notifications("window/logMessage") if params["type"] == WARNING]


def test_settings_out_of_bounds_are_refused_and_requests_keep_the_budget(tiny_model_path):
    """alternatives = attempts = 10^6 with timeBudget 10^6 kept the worker busy for minutes and made the server
    ignore exit; timeBudget Infinity made every request fail with OverflowError. Each is refused with a warning,
    the server keeps its default budget, and exit ends the process at once."""
    huge = {"alternatives": 10**6, "attempts": 10**6, "timeBudget": 10**6}
    with served(tiny_model_path) as client:
        client.initialize(huge)
        client.wait_for_model()
        client.notify("textDocument/didOpen", document_params(SMALL, SOURCE))
        assert "result" in answered_in_time(client, "textDocument/completion", position_params(SMALL, 4, 14))
        for value in (float("inf"), float("nan"), 1e308, -1):
            client.notify("workspace/didChangeConfiguration", {"settings": {"fimlsp": {"timeBudget": value}}})
        assert "result" in answered_in_time(client, "textDocument/completion", position_params(SMALL, 5, 18))
        assert "OverflowError" not in client.request_statuses()[-1]["message"]
        refused = warnings(client)
        for key, value in [*huge.items(), *[("timeBudget", value) for value in ("inf", "nan", "1e+308", "-1")]]:
            assert any(f"setting {key!r} = {value} ignored: expected " in line for line in refused), (key, refused)
        assert "result" in client.response(client.request("shutdown"))
        exit_sent = time.monotonic()
        client.notify("exit")
        assert client.exit_status() == 0
        assert time.monotonic() - exit_sent < MARGIN
