"""NDJSON framing (sans-I/O, no event loop): chunking, limits, bounded memory."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from acplink.rpc import LineDecoder, Oversized


def feed_all(dec: LineDecoder, chunks: list[bytes]) -> list[bytes | Oversized]:
    out: list[bytes | Oversized] = []
    for c in chunks:
        out += dec.feed(c)
    return out + dec.eof()


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces, prev = [], 0
    for p in [*points, len(data)]:
        pieces.append(data[prev:p])
        prev = p
    return pieces


def test_lines_split_and_cr_stripped() -> None:
    dec = LineDecoder(100)
    assert dec.feed(b'{"a":1}\r\n{"b"') == [b'{"a":1}']
    assert dec.feed(b":2}\n\n   \n") == [b'{"b":2}']
    assert dec.buffered == 0


def test_unterminated_last_line_counts_at_eof() -> None:
    dec = LineDecoder(100)
    assert dec.feed(b'{"a":1}') == []
    assert dec.eof() == [b'{"a":1}']
    assert dec.eof() == []


def test_message_of_exactly_the_limit_passes() -> None:
    dec = LineDecoder(10)
    assert dec.feed(b"0123456789\n") == [b"0123456789"]
    assert dec.feed(b"01234") == []
    assert dec.feed(b"56789\n") == [b"0123456789"]
    [item] = dec.feed(b"0123456789A\n")
    assert isinstance(item, Oversized) and item.size == 11


def test_oversized_is_discarded_with_bounded_memory_and_framing_recovers() -> None:
    limit = 1000
    dec = LineDecoder(limit)
    head = b'{"jsonrpc":"2.0","id":7,"method":"x","params":"'
    assert dec.feed(head) == []
    for _ in range(2000):  # 2 MB in 1 KB chunks, far over the limit
        assert dec.feed(b"y" * 1024) == []
        assert dec.buffered <= limit
    [item] = dec.feed(b'"}\n{"ok":1}\n')[:1]
    assert isinstance(item, Oversized)
    assert item.size == len(head) + 2000 * 1024 + 2
    assert item.head.startswith(head) and len(item.head) <= 4096
    assert item.tail.endswith(b'"}') and len(item.tail) <= 4096
    assert dec.feed(b'{"next":2}\n') == [b'{"next":2}']


def test_oversized_unterminated_at_eof() -> None:
    dec = LineDecoder(10)
    dec.feed(b"x" * 50)
    [item] = dec.eof()
    assert isinstance(item, Oversized) and item.size == 50
    assert dec.feed(b"ok\n") == [b"ok"]


@given(lines=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=20),
       cuts=st.lists(st.integers(min_value=0), max_size=30), limit=st.integers(min_value=1, max_value=50))
@settings(max_examples=300, deadline=None)
def test_any_chunking_gives_the_same_messages(lines: list[bytes], cuts: list[int], limit: int) -> None:
    data = b"".join(line + b"\n" for line in lines)
    whole = feed_all(LineDecoder(limit), [data])
    chunked = feed_all(LineDecoder(limit), split(data, cuts))
    assert chunked == whole
    expected = []
    for line in lines:
        if len(line) > limit:
            expected.append(("big", len(line)))
        elif line.removesuffix(b"\r").strip():
            expected.append(("ok", line.removesuffix(b"\r")))
    got = [("big", i.size) if isinstance(i, Oversized) else ("ok", i) for i in whole]
    assert got == expected


@given(data=st.binary(max_size=3000), cuts=st.lists(st.integers(min_value=0), max_size=40),
       limit=st.integers(min_value=1, max_value=200))
@settings(max_examples=300, deadline=None)
def test_random_bytes_memory_stays_bounded(data: bytes, cuts: list[int], limit: int) -> None:
    dec = LineDecoder(limit)
    for piece in split(data, cuts):
        for item in dec.feed(piece):
            if isinstance(item, Oversized):
                assert item.size > limit
                assert len(item.head) <= 4096 and len(item.tail) <= 4096
            else:
                assert 0 < len(item) <= limit and b"\n" not in item
        assert dec.buffered <= limit


@given(lines=st.lists(st.binary(max_size=60).map(lambda b: b.replace(b"\n", b"")), max_size=30),
       cuts=st.lists(st.integers(min_value=0), max_size=30))
@settings(max_examples=300, deadline=None)
def test_the_split_fast_path_agrees_with_the_line_loop(lines: list[bytes], cuts: list[int]) -> None:
    # a generous limit: every chunk without "\r" takes the one-split path
    data = b"".join(line + b"\n" for line in lines)
    expected = [line.removesuffix(b"\r") for line in lines if line.removesuffix(b"\r").strip()]
    assert feed_all(LineDecoder(1 << 20), split(data, cuts)) == expected
    assert feed_all(LineDecoder(1 << 20), [data]) == expected


def test_a_cr_at_the_end_of_a_chunk_waits_for_the_next_one() -> None:
    """The one-split fast path cannot strip a ``\\r`` whose ``\\n`` comes in the next chunk: a
    buffer ending in ``\\r`` sends the next chunk (itself without any ``\\r``) the careful way."""
    dec = LineDecoder(100)
    assert dec.feed(b'{"a":1}\r') == []
    assert dec.feed(b'\n{"b":2}\n') == [b'{"a":1}', b'{"b":2}']  # (no \r in this chunk)
    assert dec.feed(b'{"c":3}\r') == []
    assert dec.feed(b'\n') == [b'{"c":3}']
    assert dec.buffered == 0


def test_crlf_and_lone_cr_in_chunks_without_other_cr() -> None:
    dec = LineDecoder(100)
    assert dec.feed(b'{"a":1}\r\n{"b":2}\r\n') == [b'{"a":1}', b'{"b":2}']  # CRLF: stripped
    assert dec.feed(b'{"c":"x\ry"}\n') == [b'{"c":"x\ry"}']  # a lone CR inside a line: kept
    assert dec.feed(b"\r\n\r\n") == []  # lines of only CR: empty
    assert dec.feed(b"a\r\rb\r\r\n") == [b"a\r\rb\r"]  # only the CR of the CRLF goes
    assert dec.feed(b'{"d"') == []
    assert dec.feed(b':4}\r\n') == [b'{"d":4}']  # the buffered head, its CR in the next chunk
    assert dec.buffered == 0
