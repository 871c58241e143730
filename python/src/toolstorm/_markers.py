"""The plugin's markers: the keywords each takes, and the markers of a test read as one."""

from __future__ import annotations

from typing import Mapping, Optional, Tuple

import pytest

#: The keywords each marker takes; the first may also be given as its one positional argument. A
#: keyword not listed fails the test (a misspelled option must not be ignored): a new option is one
#: entry here, and the fixture reads it.
MARKER_KEYWORDS: Mapping[str, Tuple[str, ...]] = {
    "toolstorm": ("rules", "seed", "require_triggered", "max_calls", "routes", "explore"),
    "toolstorm_cassette": ("path", "record_mode", "normalize", "normalize_pattern", "normalize_path", "live", "replay_only"),
}


def merged_marker(item: pytest.Item, name: str) -> Optional[pytest.Mark]:
    """The test's ``name`` markers (its own, its class's, its module's) as one, its positional argument
    as the first keyword: a keyword the closest marker gives wins, and the others give the rest, so
    ``@pytest.mark.toolstorm(require_triggered=False)`` on a test keeps its class's rules. None
    without such a marker."""
    marks = list(item.iter_markers(name))  # the closest first
    if not marks:
        return None
    first = MARKER_KEYWORDS[name][0]
    merged = {}
    for mark in reversed(marks):
        merged.update(mark.kwargs)
        if mark.args:
            merged[first] = mark.args[0]
    return getattr(pytest.mark, name)(**merged).mark
