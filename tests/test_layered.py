"""Layered maps: a snapshot's maps derived from the previous commit's without copying them."""
import random

from calendar_service.domain import layered
from calendar_service.domain.layered import Layered


def test_a_derived_map_changes_without_changing_the_one_it_came_from():
    base = {i: str(i) for i in range(10)}
    first = Layered.of(base)
    first[3] = "three"
    del first[4]
    first[20] = "twenty"
    second = first.derive()
    second[4] = "four again"
    del second[20]
    second.pop(3)
    assert base == {i: str(i) for i in range(10)}        # the shared base is never written
    assert dict(first) == {**{i: str(i) for i in range(10) if i != 4}, 3: "three", 20: "twenty"}
    assert dict(second) == {**{i: str(i) for i in range(10) if i != 3}, 4: "four again"}
    assert (len(first), len(second)) == (10, 9)
    assert 4 not in first and first.get(4, "none") == "none" and 20 in first
    assert second.setdefault(30, "x") == "x" and second[30] == "x" and len(second) == 10
    assert second.pop(99, None) is None
    assert first == dict(first) and Layered.of(dict(second)) == second


def test_random_changes_match_a_dict_and_the_base_is_taken_over_past_the_share(monkeypatch):
    monkeypatch.setattr(layered, "MIN_CHANGES", 8)
    rng = random.Random(7)
    plain = {i: i for i in range(200)}
    maps = [Layered.of(dict(plain))]
    bases = set()
    for step in range(300):
        current = maps[-1].derive()
        for _ in range(rng.randint(1, 4)):
            key = rng.randrange(260)
            if rng.random() < 0.4:
                current.pop(key, None)
                plain.pop(key, None)
            else:
                current[key] = plain[key] = (step, key)
        if step % 50 == 0:
            list(current.items())   # iterating makes the flat dict the next map starts from
        assert len(current) == len(plain)
        assert all(current.get(k) == plain.get(k) and (k in current) == (k in plain) for k in range(260))
        bases.add(id(current._base))
        assert len(current._changes) <= max(8, len(current._base) // layered.CHANGES_SHARE) + 4
        maps.append(current)
    assert dict(maps[-1]) == plain
    assert len(bases) > 10    # the changes were folded into new bases as they grew
