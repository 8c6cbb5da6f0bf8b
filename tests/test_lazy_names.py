"""A lazily loaded package name is its module's object, kept after the first use; an unknown name is an
AttributeError naming the package (as `from package import nope` reports it)."""

import subprocess
import sys

import pytest


def test_a_name_is_loaded_from_its_module_only_when_asked_for():
    program = ("import sys, fimlsp.model as m\n"
               "before = 'fimlsp.model.loading' in sys.modules\n"
               "from fimlsp.model.loading import load_model\n"
               "print(before, m.load_model is load_model, 'load_model' in vars(m))\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True", "True"]


@pytest.mark.parametrize("package", ["fimlsp.model", "fimlsp.decoding"])
def test_an_unknown_name_is_an_attribute_error_naming_the_package(package):
    module = __import__(package, fromlist=["_"])
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'no_such_name'"):
        getattr(module, "no_such_name")
    with pytest.raises(ImportError, match="no_such_name"):
        exec(f"from {package} import no_such_name", {})
