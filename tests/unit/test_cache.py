"""Unit tests for shared/_cache.py: autocontext cache, recency and proven credentials (spec 6.3, 7.4, 10.1)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from shared._cache import MISS, BlockCache, ProvenCredentials, RecencyStore

DAY = 24 * 3600.0
HALF_LIFE = 14 * DAY  # spec 6.3
IDENTITY = "reporting-bot@acme-project.iam.gserviceaccount.com"
OTHER_IDENTITY = "intern@acme.example"
RESOURCE = "acme-project.analytics_123"
HASH_NAME = re.compile(r"^[0-9a-f]{64}\.json$")


class Clock:
    """An injectable clock the tests move by hand."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


# -- BlockCache: TTL (spec 7.4) --------------------------------------------------------------------


@pytest.mark.parametrize("directory", [False, True], ids=["memory", "disk"])
def test_block_cache_serves_within_ttl_and_expires_after(tmp_path: Path, clock: Clock, directory: bool) -> None:
    cache = BlockCache(tmp_path if directory else None, clock=clock)
    cache.put(IDENTITY, RESOURCE, "key_events", [{"event_name": "purchase"}], ttl_s=3600)
    clock.advance(3599)
    assert cache.get(IDENTITY, RESOURCE, "key_events") == [{"event_name": "purchase"}]
    clock.advance(2)
    assert cache.get(IDENTITY, RESOURCE, "key_events") is MISS


def test_block_cache_each_entry_has_its_own_ttl(clock: Clock) -> None:
    # spec 7.4: each block MAY have its own TTL.
    cache = BlockCache(None, clock=clock)
    cache.put(IDENTITY, RESOURCE, "volume", 1, ttl_s=3600)
    cache.put(IDENTITY, RESOURCE, "config", 2, ttl_s=86400)
    clock.advance(7200)
    assert cache.get(IDENTITY, RESOURCE, "volume") is MISS
    assert cache.get(IDENTITY, RESOURCE, "config") == 2


def test_block_cache_miss_for_unknown_entry(clock: Clock) -> None:
    assert BlockCache(None, clock=clock).get(IDENTITY, RESOURCE, "key_events") is MISS


def test_block_cache_put_replaces_and_renews(clock: Clock) -> None:
    cache = BlockCache(None, clock=clock)
    cache.put(IDENTITY, RESOURCE, "b", "old", ttl_s=10)
    clock.advance(8)
    cache.put(IDENTITY, RESOURCE, "b", "new", ttl_s=10)
    clock.advance(8)
    assert cache.get(IDENTITY, RESOURCE, "b") == "new"


def test_block_cache_falsy_values_are_hits(clock: Clock) -> None:
    cache = BlockCache(None, clock=clock)
    cache.put(IDENTITY, RESOURCE, "empty", [], ttl_s=60)
    cache.put(IDENTITY, RESOURCE, "none", None, ttl_s=60)
    assert cache.get(IDENTITY, RESOURCE, "empty") == []
    assert cache.get(IDENTITY, RESOURCE, "none") is None


# -- BlockCache: key = credential identity + resource + block (spec 7.4, 10.1.5) ---------------------


@pytest.mark.parametrize("directory", [False, True], ids=["memory", "disk"])
def test_block_cache_is_partitioned_by_identity_resource_and_block(
    tmp_path: Path, clock: Clock, directory: bool
) -> None:
    cache = BlockCache(tmp_path if directory else None, clock=clock)
    cache.put(IDENTITY, RESOURCE, "key_events", "mine", ttl_s=60)
    assert cache.get(OTHER_IDENTITY, RESOURCE, "key_events") is MISS
    assert cache.get(IDENTITY, "acme-project.other", "key_events") is MISS
    assert cache.get(IDENTITY, RESOURCE, "custom_dimensions") is MISS
    assert cache.get(IDENTITY, RESOURCE, "key_events") == "mine"


def test_block_cache_key_parts_do_not_run_together(clock: Clock) -> None:
    # ("ab", "c") and ("a", "bc") are different keys.
    cache = BlockCache(None, clock=clock)
    cache.put("ab", "c", "block", 1, ttl_s=60)
    assert cache.get("a", "bc", "block") is MISS
    assert cache.get("ab", "cblock", "") is MISS


# -- BlockCache: disk ---------------------------------------------------------------------------


def test_block_cache_persists_across_instances(tmp_path: Path, clock: Clock) -> None:
    BlockCache(tmp_path, clock=clock).put(IDENTITY, RESOURCE, "tables", {"events_*": 30}, ttl_s=600)
    clock.advance(300)
    assert BlockCache(tmp_path, clock=clock).get(IDENTITY, RESOURCE, "tables") == {"events_*": 30}


def test_block_cache_disk_entry_expires_for_a_new_instance(tmp_path: Path, clock: Clock) -> None:
    BlockCache(tmp_path, clock=clock).put(IDENTITY, RESOURCE, "tables", [1], ttl_s=600)
    clock.advance(601)
    assert BlockCache(tmp_path, clock=clock).get(IDENTITY, RESOURCE, "tables") is MISS


def test_block_cache_without_directory_writes_nothing(tmp_path: Path, clock: Clock, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    BlockCache(None, clock=clock).put(IDENTITY, RESOURCE, "b", 1, ttl_s=60)
    assert list(tmp_path.iterdir()) == []


def test_block_cache_file_names_are_hashes_without_identity_or_resource(tmp_path: Path, clock: Clock) -> None:
    cache = BlockCache(tmp_path, clock=clock)
    cache.put(IDENTITY, RESOURCE, "key_events", [1], ttl_s=60)
    cache.put(OTHER_IDENTITY, "sc-domain:acme.example", "custom_dimensions", [2], ttl_s=60)
    names = [p.name for p in tmp_path.rglob("*") if p.is_file()]
    assert len(names) == 2
    for name in names:
        assert HASH_NAME.match(name), name
        for text in (IDENTITY, OTHER_IDENTITY, RESOURCE, "acme", "key_events", "custom_dimensions", "analytics"):
            assert text not in name


def test_block_cache_files_do_not_contain_the_identity(tmp_path: Path, clock: Clock) -> None:
    # spec 7.4: the cache MUST NOT contain credentials; the identity is only hashed into the key.
    BlockCache(tmp_path, clock=clock).put(IDENTITY, RESOURCE, "b", {"rows": 3}, ttl_s=60)
    for path in tmp_path.rglob("*.json"):
        content = path.read_text("utf-8")
        assert IDENTITY not in content
        assert "iam.gserviceaccount" not in content


@pytest.mark.parametrize("garbage", [b"", b"{not json", b"\x00\xff\xfe", b'{"expires": 1e30, "data": [1, 2'])
def test_block_cache_corrupt_file_is_a_miss(tmp_path: Path, clock: Clock, garbage: bytes) -> None:
    BlockCache(tmp_path, clock=clock).put(IDENTITY, RESOURCE, "b", [1], ttl_s=60)
    (path,) = tmp_path.glob("*.json")
    path.write_bytes(garbage)
    fresh = BlockCache(tmp_path, clock=clock)
    assert fresh.get(IDENTITY, RESOURCE, "b") is MISS
    fresh.put(IDENTITY, RESOURCE, "b", [2], ttl_s=60)
    assert BlockCache(tmp_path, clock=clock).get(IDENTITY, RESOURCE, "b") == [2]


@pytest.mark.parametrize(
    "entry",
    [[1, 2], "text", {"expires": "tomorrow", "data": 1}, {"expires": 1e30}, {"data": [1]}],
    ids=["list", "string", "expires-not-number", "no-data", "no-expires"],
)
def test_block_cache_wrong_shape_file_is_a_miss(tmp_path: Path, clock: Clock, entry: object) -> None:
    BlockCache(tmp_path, clock=clock).put(IDENTITY, RESOURCE, "b", [1], ttl_s=60)
    (path,) = tmp_path.glob("*.json")
    path.write_text(json.dumps(entry))
    assert BlockCache(tmp_path, clock=clock).get(IDENTITY, RESOURCE, "b") is MISS


def test_block_cache_unwritable_directory_still_serves_from_memory(tmp_path: Path, clock: Clock) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    cache = BlockCache(blocker / "cache", clock=clock)
    cache.put(IDENTITY, RESOURCE, "b", [1], ttl_s=60)
    assert cache.get(IDENTITY, RESOURCE, "b") == [1]


# -- RecencyStore: exponential decay, 14-day half-life (spec 6.3) ----------------------------------


def _score(store: RecencyStore, identity: str, resource: str) -> float:
    return dict(store.ranked(identity))[resource]


def test_recency_one_use_scores_one_now(clock: Clock) -> None:
    store = RecencyStore(None, clock=clock)
    store.record(IDENTITY, "123")
    assert _score(store, IDENTITY, "123") == pytest.approx(1.0)


@pytest.mark.parametrize(("days", "expected"), [(7, 2**-0.5), (14, 0.5), (28, 0.25), (42, 0.125)])
def test_recency_score_halves_every_14_days(clock: Clock, days: int, expected: float) -> None:
    store = RecencyStore(None, clock=clock)
    store.record(IDENTITY, "123")
    clock.advance(days * DAY)
    assert _score(store, IDENTITY, "123") == pytest.approx(expected)


def test_recency_default_half_life_is_14_days(clock: Clock) -> None:
    store = RecencyStore(None, clock=clock)  # no half_life_s: the spec's 14 days
    store.record(IDENTITY, "123")
    clock.advance(HALF_LIFE)
    assert _score(store, IDENTITY, "123") == pytest.approx(0.5)


def test_recency_uses_accumulate_with_decay(clock: Clock) -> None:
    store = RecencyStore(None, clock=clock)
    store.record(IDENTITY, "123")
    clock.advance(14 * DAY)
    store.record(IDENTITY, "123")  # 0.5 left of the first use, plus 1
    assert _score(store, IDENTITY, "123") == pytest.approx(1.5)
    clock.advance(14 * DAY)
    assert _score(store, IDENTITY, "123") == pytest.approx(0.75)


def test_recency_ranks_by_decayed_score(clock: Clock) -> None:
    store = RecencyStore(None, clock=clock)
    for _ in range(3):
        store.record(IDENTITY, "old-favourite")  # 3 uses, 30 days ago
    clock.advance(30 * DAY)
    store.record(IDENTITY, "fresh")  # 1 use now
    clock.advance(1 * DAY)
    store.record(IDENTITY, "newest")  # 1 use now, 1 day after "fresh"
    old = 3 * 0.5 ** (31 / 14)
    fresh = 0.5 ** (1 / 14)
    assert old < fresh < 1.0
    ranked = store.ranked(IDENTITY)
    assert [rid for rid, _ in ranked] == ["newest", "fresh", "old-favourite"]
    assert [s for _, s in ranked] == pytest.approx([1.0, fresh, old])


def test_recency_frequent_old_use_can_beat_a_single_recent_one(clock: Clock) -> None:
    store = RecencyStore(None, clock=clock)
    for _ in range(5):
        store.record(IDENTITY, "frequent")
    clock.advance(14 * DAY)  # 5 * 0.5 = 2.5
    store.record(IDENTITY, "once")
    assert [rid for rid, _ in store.ranked(IDENTITY)] == ["frequent", "once"]


def test_recency_is_partitioned_by_identity(clock: Clock) -> None:
    # spec 10.1.5: recent resources are partitioned by credential identity.
    store = RecencyStore(None, clock=clock)
    store.record(IDENTITY, "mine")
    assert store.ranked(OTHER_IDENTITY) == []
    assert [rid for rid, _ in store.ranked(IDENTITY)] == ["mine"]


def test_recency_clock_going_back_does_not_inflate_scores(clock: Clock) -> None:
    store = RecencyStore(None, clock=clock)
    store.record(IDENTITY, "123")
    clock.advance(-5 * DAY)
    assert _score(store, IDENTITY, "123") <= 1.0


def test_recency_persists_across_instances_and_keeps_decaying(tmp_path: Path, clock: Clock) -> None:
    RecencyStore(tmp_path, clock=clock).record(IDENTITY, "123")
    clock.advance(14 * DAY)
    reopened = RecencyStore(tmp_path, clock=clock)
    assert reopened.ranked(IDENTITY) == [("123", pytest.approx(0.5))]
    assert reopened.ranked(OTHER_IDENTITY) == []


def test_recency_file_names_do_not_reveal_the_identity(tmp_path: Path, clock: Clock) -> None:
    store = RecencyStore(tmp_path, clock=clock)
    store.record(IDENTITY, "123")
    store.record(OTHER_IDENTITY, "456")
    store.flush()  # writes are batched; flush persists both identities
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) == 2
    for path in files:
        assert HASH_NAME.match(path.name), path.name
        assert "acme" not in path.name
        assert IDENTITY not in path.read_text("utf-8")


@pytest.mark.parametrize("garbage", ["{broken", "[1, 2]", '{"123": "x"}', '{"123": []}'])
def test_recency_corrupt_file_starts_empty(tmp_path: Path, clock: Clock, garbage: str) -> None:
    RecencyStore(tmp_path, clock=clock).record(IDENTITY, "123")
    (path,) = tmp_path.glob("*.json")
    path.write_text(garbage)
    reopened = RecencyStore(tmp_path, clock=clock)
    assert reopened.ranked(IDENTITY) == []
    reopened.record(IDENTITY, "456")
    assert [rid for rid, _ in reopened.ranked(IDENTITY)] == ["456"]


def test_recency_decay_formula_matches_half_life_for_arbitrary_times(clock: Clock) -> None:
    store = RecencyStore(None, clock=clock, half_life_s=HALF_LIFE)
    store.record(IDENTITY, "r")
    clock.advance(3.3 * DAY)
    assert _score(store, IDENTITY, "r") == pytest.approx(math.exp(-math.log(2) * 3.3 / 14))


# -- ProvenCredentials (spec 10.1) --------------------------------------------------------------

SECRET = "CANARY-SECRET-123456"


def test_fingerprint_is_stable_within_an_instance_and_ignores_key_order() -> None:
    proven = ProvenCredentials()
    a = proven.fingerprint({"type": "api_key", "api_key": SECRET})
    b = proven.fingerprint({"api_key": SECRET, "type": "api_key"})
    assert a == b


def test_fingerprint_differs_per_instance() -> None:
    # "per process: the fingerprints mean nothing elsewhere".
    creds = {"type": "api_key", "api_key": SECRET}
    assert ProvenCredentials().fingerprint(creds) != ProvenCredentials().fingerprint(creds)


def test_fingerprint_differs_for_different_secrets() -> None:
    proven = ProvenCredentials()
    assert proven.fingerprint({"api_key": SECRET}) != proven.fingerprint({"api_key": SECRET + "7"})


def test_fingerprint_never_contains_the_secret() -> None:
    proven = ProvenCredentials()
    fingerprint = proven.fingerprint({"type": "api_key", "api_key": SECRET})
    assert re.fullmatch(r"[0-9a-f]{64}", fingerprint)
    assert SECRET not in fingerprint
    assert "CANARY" not in fingerprint


def test_fingerprint_is_keyed_not_a_plain_hash() -> None:
    import hashlib

    creds = {"api_key": SECRET}
    canonical = json.dumps(creds, sort_keys=True, separators=(",", ":"))
    assert ProvenCredentials().fingerprint(creds) != hashlib.sha256(canonical.encode()).hexdigest()


def test_only_proven_credentials_are_proven() -> None:
    proven = ProvenCredentials()
    good = {"type": "password", "password": SECRET}
    wrong = {"type": "password", "password": "wrong-password-000"}
    assert not proven.is_proven(good)
    proven.prove(good)
    assert proven.is_proven(good)
    assert proven.is_proven(dict(reversed(good.items())))
    assert not proven.is_proven(wrong)
    assert not ProvenCredentials().is_proven(good)


def test_recency_writes_are_batched_and_flushed(tmp_path: Path, clock: Clock) -> None:
    """Every extraction records a use; the disk sees at most one write per flush interval."""
    store = RecencyStore(tmp_path, clock=clock, flush_every_s=3600)
    store.record(IDENTITY, "first")  # the first use of a quiet store is written at once
    assert len([p for p in tmp_path.rglob("*.json")]) == 1
    store.record(IDENTITY, "second")
    assert [r for r, _ in RecencyStore(tmp_path, clock=clock).ranked(IDENTITY)] == ["first"]
    store.flush()
    assert {r for r, _ in RecencyStore(tmp_path, clock=clock).ranked(IDENTITY)} == {"first", "second"}
