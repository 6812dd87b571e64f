"""Every size limit of the framing and the engine, at exactly the limit and one byte over.

Written for mutation testing (tools/mutate.py): moving any of these limits by one, or
dropping a kept head or tail, must fail a test here.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from acplink.errors import MessageTooLarge, UsageError
from acplink.rpc import Engine, IncomingNotification, IncomingRequest, IncomingResponse, Violation
from acplink.rpc.framing import DEFAULT_MAX_MESSAGE_SIZE, LineDecoder, Oversized

KEEP = 4096  # head and tail kept of a discarded message


def notification_of_size(size: int) -> bytes:
    """A notification line (without its newline) of exactly ``size`` bytes."""
    base = b'{"jsonrpc":"2.0","method":"n","params":""}'
    return base[:-2] + b"x" * (size - len(base)) + base[-2:]


def request_of_size(size: int, rid: int = 7) -> bytes:
    base = b'{"jsonrpc":"2.0","id":%d,"method":"m","params":""}' % rid
    return base[:-2] + b"x" * (size - len(base)) + base[-2:]


# -- framing -------------------------------------------------------------------------------------

def test_default_limit_is_64_mib() -> None:
    assert DEFAULT_MAX_MESSAGE_SIZE == 64 * 1024 * 1024 == LineDecoder().max_size == Engine().max_message_size
    assert Engine().max_pending == 10_000


@pytest.mark.parametrize("chunk", [1, 3, 10, 100])
def test_line_of_exactly_the_limit_passes_in_any_chunking(chunk: int) -> None:
    dec = LineDecoder(10)
    data = b"0123456789\nabcdefghijk\nok\n"
    out: list[Any] = []
    for i in range(0, len(data), chunk):
        out += dec.feed(data[i:i + chunk])
    assert out[0] == b"0123456789"
    assert isinstance(out[1], Oversized) and out[1].size == 11
    assert out[1].head == b"abcdefghijk" and out[1].tail == b"abcdefghijk"
    assert out[2:] == [b"ok"]
    assert dec.buffered == 0


def test_buffer_holds_exactly_the_limit_then_discards() -> None:
    dec = LineDecoder(10)
    assert dec.feed(b"0123456789") == [] and dec.buffered == 10  # exactly the limit: kept
    assert dec.feed(b"\n") == [b"0123456789"]
    assert dec.feed(b"01234567890") == [] and dec.buffered == 0  # one over: discarding
    assert dec.feed(b"\n") == [Oversized(11, b"01234567890", b"01234567890")]


def test_unterminated_line_at_eof_of_exactly_the_limit() -> None:
    dec = LineDecoder(10)
    dec.feed(b"0123456789")
    assert dec.eof() == [b"0123456789"]
    dec.feed(b"01234567890")
    assert dec.eof() == [Oversized(11, b"01234567890", b"01234567890")]
    assert dec.eof() == []


@pytest.mark.parametrize("pieces", [1, 7])
def test_discarded_message_keeps_exactly_4096_bytes_of_head_and_tail(pieces: int) -> None:
    dec = LineDecoder(100)
    line = bytes(range(256)) * 40  # 10,240 bytes, no newline in it (byte 10 replaced below)
    line = line.replace(b"\n", b"N")
    step = -(-len(line) // pieces)
    out: list[Any] = []
    for i in range(0, len(line), step):
        out += dec.feed(line[i:i + step])
    out += dec.feed(b"\nnext\n")
    assert out == [Oversized(len(line), line[:KEEP], line[-KEEP:]), b"next"]


def test_small_limit_head_grows_to_4096_while_discarding() -> None:
    dec = LineDecoder(10)
    dec.feed(b"a" * 11)  # discarding starts with an 11-byte head
    dec.feed(b"b" * 5000)
    [item] = dec.feed(b"c\n")
    assert item.head == b"a" * 11 + b"b" * (KEEP - 11)
    assert item.tail == (b"a" * 11 + b"b" * 5000 + b"c")[-KEEP:]
    assert item.size == 5012


def test_carriage_returns_and_blank_lines() -> None:
    dec = LineDecoder(10)
    assert dec.feed(b"abc\r") == []  # may be the \r of \r\n: wait
    assert dec.feed(b"\n\r\n  \n\t\nx\r\n") == [b"abc", b"x"]
    assert dec.feed(b"012345678\r\n") == [b"012345678"]  # 10 bytes with its \r: fits
    assert dec.eof() == []
    dec.feed(b"  ")
    assert dec.eof() == []


# -- engine: outgoing ---------------------------------------------------------------------------

def test_outgoing_messages_of_exactly_the_limit_are_sent() -> None:
    e = Engine(max_message_size=200)
    for make in (lambda p: e.notification("n", p), lambda p: e.result(1, p), lambda p: e.request("m", p)[1]):
        size = len(make(b'""')) - 1  # without the newline
        fits = b'"' + b"x" * (200 - size) + b'"'
        assert len(make(fits)) == 201  # 200 bytes and the newline
        with pytest.raises(MessageTooLarge) as info:
            make(b'"' + b"x" * (201 - size) + b'"')
        assert (info.value.size, info.value.limit, info.value.direction) == (201, 200, "outgoing")


def test_pending_limit_is_exact() -> None:
    e = Engine(max_pending=3)
    ids = [e.request("m", None)[0] for _ in range(3)]
    with pytest.raises(UsageError) as info:
        e.request("m", None)
    assert "(3)" in str(info.value)
    e.forget(ids[0])
    e.request("m", None)  # a slot was freed


def test_forgotten_requests_are_remembered_up_to_1024() -> None:
    e = Engine()
    ids = [e.request("m", None)[0] for _ in range(1025)]
    for rid in ids:
        e.forget(rid)
    first = e.receive(b'{"jsonrpc":"2.0","id":%d,"result":{}}\n' % ids[0])
    assert isinstance(first[0], Violation) and "unknown request id" in first[0].message
    second = e.receive(b'{"jsonrpc":"2.0","id":%d,"result":{}}\n' % ids[1])
    assert second == [IncomingResponse(ids[1], "m", result={})]
    e.forget(12345)  # not pending: nothing to remember
    assert len(e._abandoned) == 1023


# -- engine: incoming ---------------------------------------------------------------------------

def test_receive_at_exactly_the_limit_and_one_over() -> None:
    e = Engine(max_message_size=100)
    ok = notification_of_size(100)
    assert e.receive(ok + b"\n") == [IncomingNotification("n", "x" * 58)]
    [ev] = e.receive(request_of_size(101) + b"\n")
    assert isinstance(ev, Violation) and orjson.loads(ev.reply or b"{}")["id"] == 7


def test_receive_message_at_exactly_the_limit_and_one_over() -> None:
    e = Engine(max_message_size=100)
    assert e.receive_message(request_of_size(100)) == IncomingRequest(7, "m", "x" * 51)
    ev = e.receive_message(request_of_size(101))
    assert isinstance(ev, Violation)
    err = orjson.loads(ev.reply or b"{}")["error"]
    assert err["code"] == -32600 and err["data"] == {"size": 101, "limit": 100}


def test_receive_message_keeps_head_and_tail_to_find_the_id() -> None:
    e = Engine(max_message_size=100)
    body = b'{"jsonrpc":"2.0","method":"m","params":{"t":"' + b"x" * 9000 + b'"},"id":"tail-id"}'
    assert orjson.loads(e.receive_message(body).reply or b"{}")["id"] == "tail-id"  # type: ignore[union-attr]


def test_only_skipped_noise_is_flagged_noise() -> None:
    e = Engine(max_message_size=100)
    bad_json, oversized, unknown = e.receive(b'{"x":\n' + request_of_size(101) + b'\n{"jsonrpc":"2.0","id":99,"result":1}\n')
    assert isinstance(bad_json, Violation) and bad_json.reply is not None and bad_json.noise is False
    assert isinstance(oversized, Violation) and oversized.noise is False
    assert isinstance(unknown, Violation) and unknown.noise is False and unknown.reply is None
    [noise] = Engine(skip_noise=True).receive(b"hello\n")
    assert isinstance(noise, Violation) and noise.noise is True and noise.reply is None


@pytest.mark.parametrize(("pad", "answered"), [(478, True), (479, False)])
def test_oversized_request_method_is_looked_for_in_its_first_512_bytes(pad: int, answered: bool) -> None:
    e = Engine(max_message_size=1000)
    head = b'{"jsonrpc":"2.0","id":5,' + b" " * pad + b'"method":"'
    assert len(head) == 512 + (not answered)  # the key ends at byte 512, or one byte later
    [ev] = e.receive(head + b'm","params":"' + b"x" * 5000 + b'"}\n')
    assert isinstance(ev, Violation)
    assert (ev.reply is not None) is answered


def test_request_ids_count_up_from_one() -> None:
    e = Engine()
    assert [e.request("m", None)[0] for _ in range(3)] == [1, 2, 3]
    assert e.request("m", None)[1].startswith(b'{"jsonrpc":"2.0","id":4,')


def test_parse_error_preview_is_the_first_120_bytes() -> None:
    line = b"".join(b"%03d" % i for i in range(100))  # 300 bytes of non-JSON
    [ev] = Engine().receive(line + b"\n")
    assert isinstance(ev, Violation) and repr(line[:120].decode()) in ev.message
    assert repr(line[:121].decode()) not in ev.message


@pytest.mark.parametrize("rid", [b"1.5", b"null", b"[1]", b"true"])
def test_invalid_request_with_an_unusable_id_is_answered_with_null(rid: bytes) -> None:
    [ev] = Engine().receive(b'{"jsonrpc":"2.0","id":' + rid + b',"method":5}\n')
    assert isinstance(ev, Violation) and ev.reply is not None
    reply = orjson.loads(ev.reply)
    assert reply["id"] is None and reply["error"]["code"] == -32600
