"""Unpacking a host's artifact archive, with and without tarfile's extraction filters."""

from __future__ import annotations

import contextlib
import io
import tarfile
from pathlib import Path

import pytest

from pytest_mh_ansible._private.reporting import artifacts


def _archive(tmp_path: Path) -> Path:
    path = tmp_path / "a.tar.gz"
    with tarfile.open(path, "w:gz") as archive:

        def add(name: str, data: bytes = b"x", kind: bytes = tarfile.REGTYPE, link: str = "") -> None:
            info = tarfile.TarInfo(name)
            info.type = kind
            info.linkname = link
            info.size = len(data) if kind == tarfile.REGTYPE else 0
            info.mode = 0o4777
            archive.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)

        add("var/log/app.log", b"log\n")
        add("../escaped.txt")
        add("etc/evil-link", kind=tarfile.SYMTYPE, link="../../../../etc/passwd")
        add("etc/ok-link", kind=tarfile.SYMTYPE, link="../var/log/app.log")
        add("dev/null-copy", kind=tarfile.CHRTYPE)
    return path


@pytest.mark.parametrize("filters", [True, False], ids=["with-filters", "python-3.11.2"])
def test_artifacts__extract_keeps_everything_inside_the_destination(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, filters: bool
) -> None:
    if not filters:
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
    elif not hasattr(tarfile, "data_filter"):
        pytest.skip("this Python has no tarfile extraction filters")
    destination = tmp_path / "out"
    destination.mkdir()
    refused = (tarfile.FilterError,) if filters else ()  # the data filter stops at the first bad member: safe too
    with tarfile.open(_archive(tmp_path), "r:gz") as archive, contextlib.suppress(*refused):
        artifacts._extract(archive, destination)
    assert not (tmp_path / "escaped.txt").exists()
    assert not (destination / "etc" / "evil-link").exists()
    assert not (destination / "dev" / "null-copy").exists()
    if not filters:
        assert (destination / "var" / "log" / "app.log").read_text() == "log\n"
        assert (destination / "var" / "log" / "app.log").stat().st_mode & 0o7777 == 0o755
        assert (destination / "etc" / "ok-link").read_text() == "log\n"
