"""tablekeeper.core.forked: a function run in a forked child hands back its bytes, and every way
a child can fail surfaces as ForkedCallError, with no child left behind."""

from __future__ import annotations

import os
import signal
import time

import pytest

from tablekeeper.core.reclaim.reach import child_process

pytestmark = pytest.mark.skipif(not child_process.available(), reason="fork is used on Linux only")


def _hang(_send: child_process.Send) -> bytes:
    time.sleep(60)
    return b""


def _reaped(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def test_bytes_come_back_whole_even_when_larger_than_a_pipe_buffer() -> None:
    payload = os.urandom(5 << 20)
    call = child_process.ForkedCall(lambda send: payload)
    pid = call._pid
    assert call.result() == payload
    assert pid is not None and _reaped(pid)


def test_the_child_sees_the_parents_memory_and_its_writes_stay_there() -> None:
    state = {"n": 1}

    def work(_send: child_process.Send) -> bytes:
        state["n"] = 99  # a copy-on-write page of the child only
        return str(state["n"]).encode()

    assert child_process.ForkedCall(work).result() == b"99"
    assert state == {"n": 1}


def test_an_exception_in_the_child_is_reported_with_its_traceback() -> None:
    def fail(_send: child_process.Send) -> bytes:
        raise FileNotFoundError("manifest-0a0a gone")

    with pytest.raises(child_process.ForkedCallError, match="FileNotFoundError: manifest-0a0a gone"):
        child_process.ForkedCall(fail).result()


def test_a_child_that_dies_without_a_result_is_an_error() -> None:
    def die(_send: child_process.Send) -> bytes:
        os._exit(3)

    with pytest.raises(child_process.ForkedCallError, match="without a complete result"):
        child_process.ForkedCall(die).result()


def test_a_child_killed_by_a_signal_is_an_error() -> None:
    call = child_process.ForkedCall(_hang)
    assert call._pid is not None
    os.kill(call._pid, signal.SIGKILL)
    with pytest.raises(child_process.ForkedCallError, match="without a complete result"):
        call.result()


@pytest.mark.timeout(30)  # the child would sleep 60 s
def test_cancel_stops_a_running_child_and_reaps_it() -> None:
    call = child_process.ForkedCall(_hang)
    pid = call._pid
    assert pid is not None
    call.cancel()
    call.cancel()  # idempotent
    assert _reaped(pid)


def test_a_child_that_does_not_finish_in_time_is_killed() -> None:
    call = child_process.ForkedCall(_hang)
    pid = call._pid
    assert pid is not None
    with pytest.raises(child_process.ForkedCallError, match="in time"):
        call.result(timeout=0.2)
    assert _reaped(pid)
    assert child_process.ForkedCall(lambda send: b"quick").result(timeout=30) == b"quick"


def test_messages_arrive_in_order_before_the_result() -> None:
    def talk(send: child_process.Send) -> bytes:
        send(b"walked")
        send(b"x" * (1 << 20))
        return b"done"

    call = child_process.ForkedCall(talk)
    assert call.receive() == (False, b"walked")
    assert call.result() == b"done"  # the unread message is skipped
    with pytest.raises(child_process.ForkedCallError, match="already received"):
        call.receive()


def test_a_failure_after_a_message_is_reported() -> None:
    def talk_then_fail(send: child_process.Send) -> bytes:
        send(b"walked")
        raise ValueError("damaged manifest")

    call = child_process.ForkedCall(talk_then_fail)
    assert call.receive(timeout=30) == (False, b"walked")
    with pytest.raises(child_process.ForkedCallError, match="ValueError: damaged manifest"):
        call.receive(timeout=30)


def test_shared_claims_hand_out_each_index_once_across_processes() -> None:
    claims = child_process.SharedClaims()
    total = 5000

    def claim_all(_send: child_process.Send) -> bytes:
        assert claims.wait_published(30) == b"w" * 16
        mine = []
        while batch := claims.claim(total, 3):
            mine.extend(batch)
        return ",".join(map(str, mine)).encode()

    child = child_process.ForkedCall(claim_all)
    assert claims.wait_published(0) is None  # nothing published yet
    claims.publish(b"w" * 16)
    here = []
    while batch := claims.claim(total, 3):
        here.extend(batch)
    there = [int(i) for i in child.result(timeout=30).decode().split(",") if i]
    assert sorted(here + there) == list(range(total))
    with pytest.raises(ValueError):
        claims.publish(b"short")
