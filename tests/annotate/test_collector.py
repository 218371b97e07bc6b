"""annotate.common.collector: the cycle collector is paused while any reader builds a report, and
comes back (or stays off, if it was off) when the last one is done, errors included."""

from __future__ import annotations

import gc
import threading

import pytest

from annotate.common import collector


def test_nested_and_failing_readers_give_the_collector_back():
    assert gc.isenabled()
    with collector.paused():
        assert not gc.isenabled()
        with pytest.raises(ValueError), collector.paused():
            raise ValueError("a report failed")
        assert not gc.isenabled()  # the outer reader is still building
    assert gc.isenabled()


def test_a_reader_in_another_thread_keeps_it_paused_until_it_is_done():
    inside, leave = threading.Event(), threading.Event()

    def reader():
        with collector.paused():
            inside.set()
            leave.wait(5)

    thread = threading.Thread(target=reader)
    thread.start()
    inside.wait(5)
    with collector.paused():
        pass
    assert not gc.isenabled()  # the other thread's reader has not finished
    leave.set()
    thread.join(5)
    assert gc.isenabled()


def test_a_collector_turned_off_by_someone_else_stays_off():
    gc.disable()
    try:
        with collector.paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


@collector.paused()
def _decorated() -> bool:
    return gc.isenabled()


def test_it_decorates_a_function():
    assert _decorated() is False and gc.isenabled()
