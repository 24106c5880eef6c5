"""The studio tests' Chromium fixture (tests/_browser.py)."""

from _browser import browser  # noqa: F401  (the fixture)
