"""The name judge as the middle is written (`fimlsp.python.middle_names.Names`): where it cannot tell, the end's
whole-file check decides, and a true middle is never refused."""

from __future__ import annotations


def test_a_load_in_a_try_whose_except_catches_name_error_is_left_to_the_whole_file_check(names_judged):
    """idlelib's test_stackviewer: `try: abc` then, in the right context, `except NameError as exc:` (pyflakes
    lets such a `try` go); the load in the middle was debt the streaming judge refused at the end."""
    left = "import unittest\n\n\nclass StackBrowserTest(unittest.TestCase):\n"
    middle = "\n    def test_init(self):\n        try:\n            abc\n"
    right = "        except NameError as exc:\n            sb = exc\n        self.assertTrue(sb)\n"
    assert names_judged(left, middle, right) == "complete"
    assert names_judged(left, middle, right.replace("NameError", "KeyError")) != "complete"
