"""The "Writing a checkpoint store" section of docs/extending.md runs as shown."""

from __future__ import annotations

from pathlib import Path

import pytest
from _doc_pages import check_page

PAGE = Path(__file__).parent.parent.parent / "docs" / "extending.md"


@pytest.mark.timeout(600)  # a hang guard: 37 s of 120 in a whole run at load ~20
def test_the_store_section_runs_and_prints_what_it_shows(tmp_path: Path) -> None:
    page = PAGE.read_text()
    start = page.index("## Writing a checkpoint store")
    end = page.find("\n## ", start + 1)
    section = tmp_path / "stores.md"
    section.write_text(page[start : None if end == -1 else end])
    check_page(section)
