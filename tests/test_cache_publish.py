"""The one entry writer both caches use (traceviz.parse.cache.publish_entry / discard_entry):
an entry appears whole or not at all, a failed fill leaves nothing behind, an entry another run
wrote first is kept, a damaged one in the way is replaced."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from traceviz.parse.cache import ENTRY_FILE, discard_entry, publish_entry


def _fill(text: str) -> Callable[[Path], None]:
    def fill(temp: Path) -> None:
        (temp / "payload").write_text(text)
        (temp / ENTRY_FILE).write_text("{}")

    return fill


def test_an_entry_is_published_whole_and_no_temporary_directory_is_left(tmp_path: Path) -> None:
    entry = tmp_path / "root" / "abc"
    assert publish_entry(entry, _fill("one"))
    assert (entry / "payload").read_text() == "one"
    assert sorted(p.name for p in entry.parent.iterdir()) == ["abc"]


def test_a_failing_fill_is_false_and_leaves_nothing(tmp_path: Path) -> None:
    def fill(temp: Path) -> None:
        (temp / "payload").write_text("half")
        raise RuntimeError("cannot pickle")

    entry = tmp_path / "abc"
    assert publish_entry(entry, fill) is False
    assert list(tmp_path.iterdir()) == []


def test_an_entry_written_first_by_another_run_is_kept(tmp_path: Path) -> None:
    entry = tmp_path / "abc"
    assert publish_entry(entry, _fill("first"))
    assert publish_entry(entry, _fill("second"))
    assert (entry / "payload").read_text() == "first"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["abc"]


def test_a_damaged_entry_in_the_way_is_replaced(tmp_path: Path) -> None:
    entry = tmp_path / "abc"
    entry.mkdir()
    (entry / "payload").write_text("half written, no entry.json")
    assert publish_entry(entry, _fill("whole"))
    assert (entry / "payload").read_text() == "whole"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["abc"]


def test_an_unwritable_place_is_false_not_an_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    assert publish_entry(blocker / "abc", _fill("x")) is False


def test_discard_removes_a_directory_and_ignores_one_already_gone(tmp_path: Path) -> None:
    entry = tmp_path / "abc"
    assert publish_entry(entry, _fill("x"))
    discard_entry(entry)
    discard_entry(entry)
    assert list(tmp_path.iterdir()) == []
