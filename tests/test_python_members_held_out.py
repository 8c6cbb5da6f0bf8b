"""Receivers the member judge let go in the held-out run with every judge strict (issue 49), now judged: excerpts of
uvicorn's files, each with a middle the shipped model was shown and the file's true middle."""

from __future__ import annotations

from fimlsp.python.members import MemberSource
from tests.test_python_members import ENVIRONMENT, judged

# uvicorn/protocols/http/h11_impl.py's shape: the file quotes `close` only as bytes (a header's value), which no
# `hasattr` or `getattr` guard can test.
CYCLE = """class RequestResponseCycle:
    def __init__(self, transport):
        self.transport = transport
        self.headers = [(b"connection", b"close")]

    def finish(self):
        """


def test_a_name_quoted_as_bytes_is_no_member():
    assert judged(CYCLE, "self.close()", "\n") == "refused"
    assert judged(CYCLE, "self.transport.close()", "\n") == "complete"


def test_a_name_quoted_as_a_str_stays_a_member():
    quoted = CYCLE.replace('b"close"', '"close"')
    assert judged(quoted, "self.close()", "\n") == "complete"


# uvicorn/protocols/websockets/wsproto_impl.py's scope dict: the cursor right after a closed string key.
SCOPE = """class WSProtocol:
    def __init__(self, root_path):
        self.root_path = root_path

    def handle_connect(self, full_path):
        self.scope = {
            "root_path": self.root_path,
            "full_path\""""
SCOPE_RIGHT = """,
        }
"""


def test_a_receiver_after_a_closed_string_is_judged():
    """The lexer still holds a closed string (`"path"` may yet be followed by nothing that extends it): the text
    after it is code, where `self.` is judged like anywhere else."""
    assert judged(SCOPE, ": self.path", SCOPE_RIGHT) == "refused"
    assert judged(SCOPE, ": full_path", SCOPE_RIGHT) == "complete"
    assert judged(SCOPE, ": self.root_path", SCOPE_RIGHT) == "complete"


def test_a_receiver_inside_an_open_string_is_not_judged():
    assert judged(SCOPE[:-1], 'self.path": 1', SCOPE_RIGHT) == "complete"


def test_an_attribute_jedi_reads_as_a_literal_is_not_judged():
    """jedi infers `self.sys_import` from its one readable assignment, None (lib2to3's fix_exitfunc stores a node
    there too, through a dict jedi cannot read), so the receiver goes unjudged, and says why."""
    left = "class Fixer:\n    def start_tree(self):\n        self.sys_import = None\n\n    def transform(self):\n        "
    source = MemberSource(ENVIRONMENT, left + "self.sys_import.", "\n", seconds=None)
    assert source.lookup("self.sys_import").reason.startswith("a literal value inferred")
    assert judged(left, "parent = self.sys_import.parent", "\n") == "complete"


def test_a_name_quoted_as_a_key_is_no_member():
    """An ASGI scope's keys are not the protocol's attributes: `"path"` as a dict key (the one the cursor follows,
    and one elsewhere) and a subscript made `self.path` a member, as a `hasattr` guard's name would."""
    keyed = SCOPE.replace('"full_path"', '"path"') + ': full_path,\n        }\n        self.raw = self.scope["path"]'
    assert judged(SCOPE.replace('"full_path"', '"path"'), ": self.path", SCOPE_RIGHT) == "refused"
    assert judged(keyed + "\n\n    def send(self):\n        return ", "self.path", "\n") == "refused"
    guarded = keyed + "\n\n    def send(self):\n        if hasattr(self, 'path'):\n            return "
    assert judged(guarded, "self.path", "\n") == "complete"


# starlette/requests.py's shape: an optional attribute, None until a form is read.
REQUEST = """from typing import Optional


class Form:
    def close(self):
        pass


class Request:
    def __init__(self):
        self._form: Optional[Form] = None

    def is_disconnected(self):
        if self._form is not None:
            return """


def test_an_optional_receiver_is_judged_by_its_other_type():
    assert judged(REQUEST, "self._form.is_disconnected()", "\n") == "refused"
    assert judged(REQUEST, "self._form.close()", "\n") == "complete"


# uvicorn/supervisors/multiprocess.py's shape: a local instance of a class the file defines.
SUPERVISOR = """class Process:
    def __init__(self, target):
        self.target = target

    def join(self):
        pass


def restart(target):
    new_process = Process(target)
    new_process.join()
    """


def test_a_local_instance_of_a_class_in_the_file_is_judged():
    assert judged(SUPERVISOR, "new_process.wait()", "\n") == "refused"
    assert judged(SUPERVISOR, "new_process.join()", "\n") == "complete"
    assert judged(SUPERVISOR, "new_process.target", "\n") == "complete"
    assert judged(SUPERVISOR, "new_process.started = True", "\n") == "complete"


# uvicorn/server.py's shape: a comment's sentence ends with a period right before a local assignment.
SERVER = """class Config:
    def __init__(self, uds):
        self.uds = uds


def startup(config: Config):
    # Create a socket using UNIX domain socket.
    uds_perms = 0o666
    if config.uds:
        """


def test_a_comments_period_before_an_assignment_stores_no_attribute():
    assert judged(SERVER, "return config.uds_perms", "\n") == "refused"
    assert judged(SERVER, "return config.uds or uds_perms", "\n") == "complete"


def test_a_module_that_makes_globals_at_run_time_is_not_judged():
    """ssl makes CERT_NONE with `_IntEnum._convert_` (uvicorn/config.py's `ssl_cert_reqs: int = ssl.CERT_NONE`)."""
    left = "import ssl\n\nreqs = ssl."
    source = MemberSource(ENVIRONMENT, left, "\n", seconds=None)
    assert source.lookup("ssl").reason == "the module ssl makes globals at run time"
    assert judged(left, "CERT_NONE", "\n") == "complete"


# uvicorn/protocols/http/zttp_impl.py's RequestResponseCycle: its flags are stored as bools only.
FLAGS = """class RequestResponseCycle:
    def __init__(self, transport):
        self.transport = transport
        self.response_complete = False
        self.retries: int = 0

    def finish(self):
        self.response_complete = True  # the last body part was sent

    async def receive(self):
        if self.response_complete:
            """


def test_an_attribute_stored_only_as_literals_of_one_type_is_judged_by_that_type():
    """jedi reads `self.response_complete` as the literal False; every store of it is a bool, so it is a bool (the
    shipped model wrote `self.response_complete.close()`, which pyright flags)."""
    assert judged(FLAGS, "self.response_complete.close()", "\n") == "refused"
    assert judged(FLAGS, "return self.response_complete.real", "\n") == "complete"
    assert judged(FLAGS, "self.retries.close()", "\n") == "refused"
    assert judged(FLAGS, "return self.retries.bit_length()", "\n") == "complete"


def test_an_attribute_stored_otherwise_too_is_not_judged_by_a_literal():
    """Another value, an augmented assignment, a class body's name, a base class, or the middle's own store: the
    literal jedi read says nothing of the attribute's type."""
    others = {
        "another value": FLAGS.replace("= True", "= transport.closed"),
        "an augmented assignment": FLAGS.replace("= True  #", "|= transport.closed  #"),
        "a target list": FLAGS.replace("= True  #", ", self.transport = None, None  #"),
        "the class body's": FLAGS.replace("Cycle:\n", "Cycle:\n    response_complete: object\n\n"),
        "a base class": FLAGS.replace("class RequestResponseCycle:", "class RequestResponseCycle(Cycle):"),
    }
    for why, left in others.items():
        assert judged(left, "self.response_complete.close()", "\n") == "complete", why
    stored = "self.response_complete = open(self.transport)\n            self.response_complete.close()"
    assert judged(FLAGS, stored, "\n") == "complete"


def test_the_member_the_right_context_writes_after_the_middle_is_judged():
    """fastapi/utils.py: `operation_id = ` + `re` + `.sub(...)`; the shipped model wrote `operation_id` there, a str,
    which has no `sub`."""
    left = ("import re\n\n\ndef generate_operation_id(name, path, method):\n"
            "    operation_id = f\"{name}{path}\"\n    operation_id = ")
    right = ".sub(r\"\\W\", \"_\", operation_id)\n    return operation_id\n"
    assert judged(left, "re", right) == "complete"
    assert judged(left, "operation_id", right) == "incomplete"
    assert judged(left, "f\"{operation_id}_{method.lower()}\"\n    operation_id", right) == "incomplete"
    assert judged(left, "operation_id.strip()\n    operation_id = re", right) == "complete"
    assert judged("import os\n\n\ndef f(p):\n    return ", "os.path", ".join(p)\n") == "complete"
    assert judged("import os\n\n\ndef f(p):\n    return ", "os.path", ".joinn(p)\n") == "incomplete"
    assert judged("class C:\n    def f(self, p):\n        ", "self", ".p = p\n") == "complete"


def test_a_string_literals_members_are_a_strs_or_a_bytes():
    """The same cut: the shipped model then wrote `f"{operation_id}_{method.lower()}"` before `.sub(...)`."""
    left = "def generate_operation_id(name, path, method):\n    operation_id = "
    right = ".sub(r\"\\W\", \"_\", operation_id)\n    return operation_id\n"
    assert judged(left, "f\"{name}_{method.lower()}\"", right) == "incomplete"
    assert judged(left, "\"-\".joinn(path)", "\n") == "refused"
    for middle in ("\"-\".join(path)", "b\"-\".decode()", "\"{}\".format(name).upper()", "\"a\" \"b\".upper()"):
        assert judged(left, middle, "\n") == "complete", middle
