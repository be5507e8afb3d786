"""``view.Slots``: served id -> position, dense ids in an array, the others in a dict."""
from calendar_service.index.view import Slots


def test_dense_and_sparse_ids_map_to_their_positions():
    rids = [7, 3, 10**12, 1, 5_000_000_000, 0]
    slots = Slots(rids)
    for position, rid in enumerate(rids):
        assert slots.get(rid) == position
    assert len(slots._sparse) == 2   # the two ids far beyond the view's size


def test_ids_not_in_the_view_are_missing():
    slots = Slots([2, 4])
    for absent in (0, 1, 3, 5, 99, 10**9, -1, "2", 2.0, None):
        assert slots.get(absent) is None
    assert slots.get(3, "default") == "default"
    assert Slots([]).get(0) is None
