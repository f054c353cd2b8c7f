"""Signals: teardown is shielded from a second Ctrl-C; ignored signals stay ignored."""

import os
import signal
import time

import pytest

from fslab.signals import Terminated, install_handlers, shielded


def test_shielded_defers_sigint_to_the_end_of_the_block():
    # Python's own handler, even where the suite was started with SIGINT ignored (nohup).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    reached_end = False
    try:
        with pytest.raises(KeyboardInterrupt):
            with shielded():
                os.kill(os.getpid(), signal.SIGINT)
                reached_end = True  # the signal did not cut the block short
    finally:
        signal.signal(signal.SIGINT, previous)
    assert reached_end


def test_sigterm_unwinds_as_terminated():
    previous = signal.getsignal(signal.SIGTERM)
    try:
        install_handlers()
        with pytest.raises(Terminated):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.5)
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_ignored_sighup_stays_ignored():
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        install_handlers()
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        with shielded():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, previous)
