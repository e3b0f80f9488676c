"""traceviz.cache_paths: the one place the caches' directory rule and names live (the parse,
report and output caches and the command line all use it), importable without the parser."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from traceviz import cache_paths, report_cache
from traceviz.commands import output_cache
from traceviz.errors import UsageError
from traceviz.parse import cache as parse_cache


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("TRACEVIZ_CACHE_DIR", "TRACEVIZ_NO_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "~/.cache/traceviz"),
        ({"TRACEVIZ_CACHE_DIR": "{tmp}/here"}, "{tmp}/here"),
        ({"TRACEVIZ_CACHE_DIR": "~/somewhere"}, "~/somewhere"),
        ({"XDG_CACHE_HOME": "{tmp}/xdg"}, "{tmp}/xdg/traceviz"),
        ({"TRACEVIZ_NO_CACHE": "1", "TRACEVIZ_CACHE_DIR": "{tmp}/here"}, None),
        ({"TRACEVIZ_NO_CACHE": "0"}, "~/.cache/traceviz"),
        ({"TRACEVIZ_NO_CACHE": " Off "}, "~/.cache/traceviz"),
        ({"TRACEVIZ_NO_CACHE": "yes"}, None),
        ({"TRACEVIZ_NO_CACHE": "false", "XDG_CACHE_HOME": "{tmp}/xdg"}, "{tmp}/xdg/traceviz"),
    ],
)
def test_the_default_cache_directory(
    env: dict[str, str], expected: str | None, tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    for name, value in env.items():
        clean_env.setenv(name, value.format(tmp=tmp_path))
    want = None if expected is None else Path(expected.format(tmp=tmp_path)).expanduser()
    assert cache_paths.cache_dir() == want
    assert cache_paths.cache_dir(None) == want
    assert cache_paths.cache_dir(False) is None
    assert cache_paths.cache_dir(tmp_path / "given") == tmp_path / "given"  # env or not


def test_a_file_in_the_way_is_a_usage_error_naming_it(
    tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    with pytest.raises(UsageError, match=f"^{re.escape(f'cache {a_file}')} is not"):
        cache_paths.cache_dir(a_file)
    clean_env.setenv("TRACEVIZ_CACHE_DIR", str(a_file))
    with pytest.raises(UsageError, match=f"^{re.escape(f'TRACEVIZ_CACHE_DIR {a_file}')} is not"):
        cache_paths.cache_dir()
    clean_env.delenv("TRACEVIZ_CACHE_DIR")
    clean_env.setenv("XDG_CACHE_HOME", str(tmp_path))
    (tmp_path / "traceviz").write_text("x")
    with pytest.raises(
        UsageError, match=f"^{re.escape(f'the cache directory {tmp_path}/traceviz')} is not"
    ):
        cache_paths.cache_dir()
    with pytest.raises(UsageError, match="cache must be True, False or a directory"):
        cache_paths.cache_dir(3)  # type: ignore[arg-type]


def test_every_cache_uses_the_one_definition() -> None:
    """The caches' directory rule and entry file are one definition, not copies."""
    assert parse_cache.cache_dir is cache_paths.cache_dir
    assert parse_cache.ENTRY_FILE is report_cache.ENTRY_FILE is cache_paths.ENTRY_FILE
    assert output_cache.cache_dir is report_cache.cache_dir is cache_paths.cache_dir


def test_it_imports_nothing_heavy() -> None:
    code = (
        "import sys, traceviz.cache_paths\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('pandas', 'numpy', 'pyarrow', 'msgspec') or m.startswith('traceviz.parse')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
