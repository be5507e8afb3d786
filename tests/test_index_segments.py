"""Segment parts read in place (``index.whoosh_internals.MappedReader``): what whoosh and the unpickler
read through it is what a plain file gives, and a pickled posting-block header costs a couple of
reads, not one per value."""
from __future__ import annotations

import io
import pickle

from calendar_service.index.whoosh_internals import PEEK_BYTES, MappedReader

VALUES = [(3, 0, 1.0, None, 17), tuple(range(400)), "x" * 1000, {"a": (1, 2.5)}, b"", (2 ** 40, -1)]


def _pickled() -> tuple[bytes, list[int]]:
    out, ends = io.BytesIO(), []
    for value in VALUES:
        pickle.dump(value, out, 2)   # whoosh's posting blocks are protocol 2 pickles
        ends.append(out.tell())
    out.write(b"trailing bytes")
    return out.getvalue(), ends


def test_sequential_pickles_read_through_the_mapping_as_through_a_file():
    data, ends = _pickled()
    reader = MappedReader(memoryview(data))
    for value, end in zip(VALUES, ends):
        assert pickle.load(reader) == value
        assert reader.tell() == end   # exactly past its pickle, as a plain file leaves it
    assert reader.read() == b"trailing bytes"


def test_peek_leaves_the_position_where_it_was():
    data, _ = _pickled()
    reader = MappedReader(memoryview(data))
    reader.seek(10)
    assert reader.peek(5) == data[10:15]
    assert reader.peek() == data[10:10 + PEEK_BYTES]
    assert reader.peek(1 << 17) == data[10:10 + PEEK_BYTES]   # what the unpickler asks for
    assert reader.tell() == 10
    reader.seek(len(data))
    assert reader.peek(5) == b""


class _Counting(MappedReader):
    __slots__ = ("reads",)

    def __init__(self, buf):
        super().__init__(buf)
        self.reads = 0

    def read(self, size=-1):
        self.reads += 1
        return super().read(size)


def test_a_block_header_is_unpickled_in_a_couple_of_reads():
    # a posting block header: (lengths, ids, weights...) tuple of a few values
    header = (128, 5000, 0.75, None, 1, 3, 2.0)
    data = pickle.dumps(header, 2) * 3
    reader = _Counting(memoryview(data))
    assert [pickle.load(reader) for _ in range(3)] == [header] * 3
    assert reader.reads <= 6, f"{reader.reads} reads for 3 headers: the unpickler no longer reads ahead"
