"""The one expiring, bounded table: entries live until their own expiry, the least recently
used go first past the bound, and a lifetime of nothing is not kept."""

from __future__ import annotations

from pdpp_gateway.expiring import Expiring


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_entries_expire_on_their_own_time() -> None:
    clock = Clock()
    table: Expiring[str, int] = Expiring(10, clock)
    table.put("short", 1, 5)
    table.put("long", 2, 60)
    table.put("never", 3, 0)
    assert (table.get("short"), table.get("long"), table.get("never")) == (1, 2, None)
    assert table.expiry("long") == 160
    clock.now += 5
    assert table.get("short") is None  # expired at its expiry, not after
    assert table.get("long") == 2


def test_the_least_recently_used_go_first_and_forget_picks_by_key() -> None:
    table: Expiring[tuple[str, str], str] = Expiring(2, Clock())
    table.put(("alice", "a"), "A", 60)
    table.put(("bob", "b"), "B", 60)
    assert table.get(("alice", "a")) == "A"  # now the most recently used
    table.put(("carol", "c"), "C", 60)
    assert table.get(("bob", "b")) is None
    assert table.get(("alice", "a")) == "A"
    table.forget(lambda key: key[0] == "alice")
    assert table.get(("alice", "a")) is None
    assert table.get(("carol", "c")) == "C"
