"""pytest-mh's ``MultihostLogger`` in the layer: a ``logging.Logger`` with pytest-mh's extras, split files, colours."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path

import pytest

from pytest_mh_ansible.compat import MultihostLogger
from pytest_mh_ansible.compat.logger import ROOT, MultihostHostLogger, logger_for


def _suffix() -> str:
    return f"t{uuid.uuid4().hex[:8]}"


def test_compat_logger__is_a_logging_logger_made_by_GetLogger() -> None:
    suffix = _suffix()
    logger = MultihostLogger.GetLogger(suffix=suffix)
    assert isinstance(logger, logging.Logger)
    assert logger.name == f"{ROOT}.logger.{suffix}"
    assert MultihostLogger.GetLogger(suffix=suffix) is logger
    assert logging.getLogger(f"{ROOT}.logger.{suffix}") is logger
    assert (logger.allow_colors, logger.log_path, logger.extra, logger.handler) == (False, None, {}, None)
    # the class is only swapped while the logger is made
    assert logging.getLoggerClass() is logging.Logger
    assert type(logging.getLogger(f"plain.{suffix}")) is logging.Logger


def test_compat_logger__GetLogger_refuses_a_name_taken_by_another_class() -> None:
    suffix = _suffix()
    MultihostLogger.GetLogger(suffix=suffix)
    with pytest.raises(ValueError, match="not a MultihostHostLogger"):
        MultihostLogger.GetLogger(loggercls=MultihostHostLogger, suffix=suffix)


def test_compat_logger__extra_data_is_written_below_the_message(caplog: pytest.LogCaptureFixture) -> None:
    logger = MultihostLogger.GetLogger(suffix=_suffix())
    with caplog.at_level(logging.DEBUG, logger=logger.name):
        logger.info("enrolled %s", "client", extra={"data": {"Realm": "TEST", "Files": ["/a", "/b"]}})
        logger.log(logging.WARNING, "plain")
    first, second = caplog.records
    assert first.getMessage() == "enrolled client\n  Realm: TEST\n  Files:\n    - /a\n    - /b"
    assert (second.levelno, second.getMessage()) == (logging.WARNING, "plain")


def test_compat_logger__host_loggers_name_their_host_in_every_record(caplog: pytest.LogCaptureFixture) -> None:
    parent = MultihostLogger.GetLogger(suffix=_suffix())
    host = parent.subclass(MultihostHostLogger, "host.client1", hostname="client1")
    assert isinstance(host, MultihostHostLogger)
    assert host.name == f"{parent.name.rsplit('.', 1)[0]}.host.client1"
    with caplog.at_level(logging.DEBUG, logger=host.name):
        host.debug("hello")
    [record] = caplog.records
    assert (getattr(record, "host", None), getattr(record, "mh_host", None)) == ("client1", "client1")
    assert logger_for("utility", "client2").extra == {"host": "client2"}


def test_compat_logger__colorize_only_when_colours_are_allowed() -> None:
    logger = MultihostLogger.GetLogger(suffix=_suffix())
    assert logger.colorize(42, "\x1b[31m") == "42"
    logger.allow_colors = True
    assert logger.colorize("red", "\x1b[31m", "\x1b[1m") == "\x1b[31m\x1b[1mred\x1b[0m"


@pytest.mark.parametrize(
    ("mode", "outcome", "written"),
    [
        ("always", "passed", True),
        ("on-failure", "failed", True),
        ("on-failure", "error", True),
        ("on-failure", "passed", False),
        ("never", "failed", False),
    ],
)
def test_compat_logger__split_files_are_written_when_the_mode_wants_them(
    tmp_path: Path, mode: str, outcome: str, written: bool
) -> None:
    logger = MultihostLogger.GetLogger(suffix=_suffix())
    logger.setup(log_path=None, artifacts_mode=mode, artifacts_dir=tmp_path, confdict={})
    logger.setLevel(logging.DEBUG)
    logger.phase("SETUP")
    logger.info("first")
    logger.split("tests/t/setup.log")
    logger.info("second")
    logger.flush(outcome, "tests/t/test.log")
    setup, test = tmp_path / "tests/t/setup.log", tmp_path / "tests/t/test.log"
    assert setup.exists() is written
    assert test.exists() is written
    if written:
        assert "SETUP" in setup.read_text()
        assert "first" in setup.read_text()
        assert "second" not in setup.read_text()
        assert "second" in test.read_text()
    # flushed: nothing is kept for the next test
    logger.flush("failed")
    assert not (tmp_path / "tests/t").exists() or sorted(p.name for p in (tmp_path / "tests/t").iterdir()) == [
        "setup.log",
        "test.log",
    ]


def test_compat_logger__setup_with_a_log_path_writes_there(tmp_path: Path) -> None:
    logger = MultihostLogger.GetLogger(suffix=_suffix())
    logger.setup(log_path=str(tmp_path / "mh.log"), artifacts_mode="always", artifacts_dir=tmp_path)
    logger.setLevel(logging.DEBUG)
    logger.info("to the file")
    assert logger.handler is not None
    logger.handler.flush()
    assert "to the file" in (tmp_path / "mh.log").read_text()
    logger.split("ignored.log")  # records are not kept: nothing to split
    logger.flush("failed")
    assert not (tmp_path / "ignored.log").exists()
    logger.removeHandler(logger.handler)
    logger.handler.close()
