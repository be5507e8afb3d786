"""Outbound webhooks: subscriptions, turning commits into deliveries, and delivering them.

Subscriptions, their secrets and the delivery queue live in the state database
(``storage/state.py``), never in the content repository. One background thread per process
competes for the delivery lease in that database; the one process holding it:

1. *produces*: walks the branch from the cursor (the last commit turned into deliveries) to
   the head, one first-parent step at a time (an API write, an editor's commit, a pulled or
   merged commit), computes the changes-feed entries of each step with the service's own code
   (``RecordHistory.records_changed``/``entries``) from the point of view of each subscription's
   owner, and enqueues one delivery per matching subscription together with the new cursor,
   in one transaction. A branch that was force-moved (the cursor is no longer in its history)
   gives one delivery of the net changes from the cursor's commit to the new head, marked
   ``replaced``;
2. *delivers*: per subscription the oldest undelivered entry first (commit order), claimed
   for this process in the database first (``StateDB.claim``: two processes that both believe
   they hold the lease never attempt the same delivery), one at a time per subscription, up to ``CALENDAR_WEBHOOK_WORKERS`` subscriptions at once on a pool of
   delivery threads (a receiver that hangs holds one worker until the timeout, never the
   others, and never the thread that produces and renews the lease), signed as
   Standard Webhooks (``webhook-id`` fixed per delivery, so a retry or a repeat after a crash
   carries the same id), retried with exponential backoff; a run of
   ``CALENDAR_WEBHOOK_MAX_FAILURES`` failures disables the subscription.

Nothing here runs on the request path but the management calls; a write never waits for a
webhook and never fails because of one.
"""
from __future__ import annotations

import base64
import concurrent.futures
import json
import logging
import os
import secrets
import socket
import threading
import time
from datetime import datetime, timezone

from standardwebhooks.webhooks import Webhook

from calendar_service.domain.faults import FAULTS
from calendar_service.auth.accounts import Accounts, User
from calendar_service.config import Settings
from calendar_service.domain.resources import CATEGORIES, EVENTS, RESOURCES, TAGS
from calendar_service.service import errors, outbound
from calendar_service.service.history import RecordHistory
from calendar_service.storage.catalog import Catalog
from calendar_service.storage.state import StateDB, StateUnavailable
from calendar_service.storage.store import ZERO, GitStore, StoreError

log = logging.getLogger(__name__)

TYPES = tuple(RESOURCES)          # events, venues, organizers, categories, tags
MAX_PER_OWNER = 100               # subscriptions one account may hold
MAX_TERMS = 100                   # categories or tags in one filter
STEPS_PER_ROUND = 50              # commits turned into deliveries per transaction
JOIN_SECONDS = 5.0
CLAIM_MARGIN = 5.0                # seconds a claim outlives the webhook timeout (see ``deliver_due``)
EVENT_TYPE = "calendar.changed"


def _iso(value: float | None) -> str | None:
    if value is None:
        return None
    return datetime.fromtimestamp(value, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_secret() -> str:
    """A Standard Webhooks secret: ``whsec_`` and 32 random bytes in base64."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode("ascii")


class Webhooks:
    """The webhooks of one service (see the module)."""

    def __init__(self, settings: Settings, store: GitStore, catalog: Catalog, history: RecordHistory, accounts: Accounts,
                 db: StateDB | None = None):
        self.settings = settings
        self.store = store
        self.catalog = catalog
        self.history = history
        self.accounts = accounts
        self.db = db if db is not None else StateDB.of(settings)
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self._lease_until = 0.0
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._stuck: str | None = None  # why production waits (logged once)
        self._pool = DeliveryPool(settings.webhook_workers, self._attempt, self._wake.set)

    # ------------------------------------------------------------------------- management

    def create(self, user: User, url: str, filter: dict) -> tuple[dict, str]:
        """A new subscription of ``user`` to ``url`` (checked: see ``outbound``); returns its view
        and its secret, which is shown this once."""
        self._check_url(url)
        mine, count = self.db.subscriptions(owner=user.id, limit=1)
        if count >= MAX_PER_OWNER:
            raise errors.invalid_param("url", f"An account may hold at most {MAX_PER_OWNER} subscriptions.")
        secret = new_secret()
        found = self.db.add_subscription(user.id, url, secret, filter, time.time(), self.store.head() or ZERO)
        self.nudge()
        return self.view(found), secret

    def _check_url(self, url: str) -> None:
        try:
            outbound.check(url, self.settings.webhook_allow_private)
        except outbound.TargetRefused as exc:
            raise errors.invalid_param("url", str(exc)) from None

    def _mine(self, user: User, sub_id: int) -> dict:
        found = self.db.subscription(sub_id)
        if found is None or (user.role != "administrator" and found["owner"] != user.id):
            raise errors.ServiceError("calendar-subscription-not-found", f"No subscription {sub_id}.",
                                      errors.NOT_FOUND)
        return found

    def list(self, user: User, page: int, per_page: int) -> tuple[list[dict], int]:
        """The caller's subscriptions (an administrator's: everyone's), oldest first."""
        owner = None if user.role == "administrator" else user.id
        found, total = self.db.subscriptions(owner=owner, limit=per_page, offset=(page - 1) * per_page)
        return [self.view(s) for s in found], total

    def get(self, user: User, sub_id: int) -> dict:
        return self.view(self._mine(user, sub_id))

    def update(self, user: User, sub_id: int, values: dict) -> dict:
        """Change a subscription's ``url``, filter or ``enabled`` (``true`` re-enables a disabled
        one: its run of failures starts again and its queue is retried at once)."""
        self._mine(user, sub_id)
        if "url" in values:
            self._check_url(values["url"])
        changes = {k: values[k] for k in ("url", "enabled") if k in values}
        if "filter" in values:
            changes["filter"] = values["filter"]
        found = self.db.update_subscription(sub_id, time.time(), **changes)
        self.nudge()
        return self.view(found)

    def delete(self, user: User, sub_id: int) -> dict:
        found = self._mine(user, sub_id)
        self.db.delete_subscription(sub_id)
        return self.view(found)

    def deliveries(self, user: User, sub_id: int, page: int, per_page: int) -> tuple[list[dict], int]:
        """The delivery log of a subscription, newest first."""
        self._mine(user, sub_id)
        found, total = self.db.deliveries(sub_id, per_page, (page - 1) * per_page)
        return [self.delivery_view(d) for d in found], total

    @staticmethod
    def view(sub: dict) -> dict:
        """A subscription as the API shows it (never its secret)."""
        flt = sub["filter"]
        return {"id": sub["id"], "url": sub["url"], "types": flt.get("types") or list(TYPES),
                "categories": flt.get("categories") or [], "tags": flt.get("tags") or [],
                "enabled": sub["enabled"], "disabled_reason": sub["disabled_reason"],
                "consecutive_failures": sub["failures"], "owner": sub["owner"],
                "created": _iso(sub["created"]), "modified": _iso(sub["updated"])}

    @staticmethod
    def delivery_view(d: dict) -> dict:
        pending = d["status"] == "pending"
        status = "delivered" if not pending else "retrying" if d["attempts"] else "pending"
        payload = json.loads(d["payload"])
        return {"id": d["id"], "webhook_id": d["message_id"], "commit": d["commit_id"], "status": status,
                "attempts": d["attempts"], "last_error": d["last_error"], "last_status_code": d["last_status"],
                "changes": len(payload.get("data", {}).get("changes", [])),
                "created": _iso(d["created"]), "last_attempt": _iso(d["last_attempt"]),
                "delivered": _iso(d["delivered"]), "next_attempt": _iso(d["next_attempt"]) if pending else None}

    # ------------------------------------------------------------------------- producing

    def produce(self) -> bool:
        """Turn the commits between the cursor and the branch head into deliveries (at most
        STEPS_PER_ROUND); returns whether the cursor moved."""
        cursor = self.db.cursor()
        head = self.store.head()
        if cursor is None or head is None or head == cursor:
            return False
        replaced = None
        if cursor != ZERO and not self.store.has_commit(cursor):
            # another replica sharing the state dir is ahead: wait until this one has pulled it
            self._waiting(f"the last announced commit {cursor[:12]} is not in this repository yet")
            return False
        if cursor == ZERO or self.store.is_ancestor(cursor, head):
            steps = [c for c, _ in self.store.first_parent_steps(None if cursor == ZERO else cursor, head,
                                                                 STEPS_PER_ROUND)]
        elif self.settings.git_remote and self.store.is_ancestor(head, cursor):
            # a replica sharing the state dir announced commits this one has not pulled yet (a remote
            # reset to an older commit is announced with the next commit, as a replaced history)
            self._waiting(f"this repository's branch is behind the last announced commit {cursor[:12]}")
            return False
        else:  # the branch was reset or force-moved: announce the net change from what was announced last
            log.warning("webhooks: the branch no longer holds %s (history rewritten); announcing the net changes "
                        "to %s", cursor[:12], head[:12])
            steps, replaced = [head], cursor
        self._stuck = None
        subs, _ = self.db.subscriptions(enabled_only=True, limit=1_000_000)
        previous = cursor
        for commit in steps:
            rows = self._deliveries_for(previous, commit, subs, replaced)
            if not self.db.enqueue(previous, commit, rows, time.time()):
                return False  # another process enqueued these meanwhile
            previous = commit
        return True

    def _waiting(self, why: str) -> None:
        if why != self._stuck:
            log.info("webhooks: waiting: %s", why)
        self._stuck = why

    def _deliveries_for(self, since: str, commit: str, subs: list[dict], replaced: str | None) -> list[tuple]:
        if not subs:
            return []
        snapshot = self.catalog.at(commit)
        before, after = self.history.records_changed(None if since == ZERO else since, snapshot)
        if not before and not after:
            return []
        rows = []
        viewers: dict = {}
        for sub in subs:
            owner = sub["owner"]
            if owner not in viewers:
                user = self.accounts.by_id(owner)  # a removed account sees what anyone sees
                viewers[owner] = self.history.entries(before, after, user)
            changes = [dict(e, commit=commit) for e in viewers[owner]
                       if self._matches(sub["filter"], e, before, after, snapshot)]
            if not changes:
                continue
            data = {"commit": commit, "changes": changes}
            if replaced:
                data["replaced"] = replaced
            payload = {"type": EVENT_TYPE, "timestamp": _iso(time.time()), "data": data}
            rows.append((sub["id"], "msg_" + secrets.token_hex(16), commit,
                         json.dumps(payload, ensure_ascii=False, separators=(",", ":"))))
        return rows

    @staticmethod
    def _matches(flt: dict, entry: dict, before: dict, after: dict, snapshot) -> bool:
        types = flt.get("types")
        if types and entry["type"] not in types:
            return False
        wanted = {"categories": flt.get("categories"), "tags": flt.get("tags")}
        if not any(wanted.values()):
            return True
        if entry["type"] != EVENTS.name:  # a category or tag filter asks for events only
            return False
        key = (entry["type"], entry["id"])
        for record in (after.get(key), before.get(key)):
            if record is None:
                continue
            for field, resource in (("categories", CATEGORIES), ("tags", TAGS)):
                ids = wanted[field]
                if ids and FAULTS.guard(record, "its webhook filter", lambda: any(
                        (term := snapshot.resolve(resource, ref)) is not None and term.id in ids
                        for ref in record.data.get(field) or []), False):
                    return True
        return False

    # ------------------------------------------------------------------------- delivering

    def deliver_due(self, wait: bool = False) -> float | None:
        """Start every delivery whose time has come on the delivery workers (a subscription with
        one under way waits for it: its next one is due only once that one is done); returns when
        the next one is due. With ``wait``, returns once the started deliveries are done."""
        busy = self._pool.busy()  # before the queue is read (see DeliveryPool.busy)
        if self._stop.is_set() or not self._renew():
            return None
        due, later = self.db.claim(time.time(), self.worker_id, self._claim_seconds())
        started, unstarted = [], []
        for delivery in due:
            if self._stop.is_set() or not self._renew():
                unstarted.append(delivery)
                continue
            if delivery["subscription"] in busy:
                continue   # claimed again by its own attempt under way, which records it
            future = self._pool.start(delivery)
            if future is None:
                unstarted.append(delivery)
            else:
                started.append(future)
        if unstarted:  # another process may take them at once
            self.db.release_claims([d["id"] for d in unstarted], self.worker_id)
            if self._stop.is_set() or self._lease_until <= time.time():
                return None
        if wait:
            concurrent.futures.wait(started)
        return later

    def _claim_seconds(self) -> float:
        """How long a claim lasts: one attempt and a margin. An attempt that waited for a free
        worker renews it before it starts; a process killed midway leaves it to expire, and the
        next lease holder repeats the delivery with the same webhook-id."""
        return self.settings.webhook_timeout + CLAIM_MARGIN

    def _attempt(self, d: dict) -> None:
        if time.time() > d["claimed_until"] - self.settings.webhook_timeout - 1:
            if not self.db.hold(d["id"], self.worker_id, time.time() + self._claim_seconds()):
                return  # waited too long: another process claimed it
        stamp = datetime.now(timezone.utc)
        headers = {"webhook-id": d["message_id"], "webhook-timestamp": str(int(stamp.timestamp())),
                   "webhook-signature": Webhook(d["secret"]).sign(d["message_id"], stamp, d["payload"])}
        status, error = None, None
        try:
            status = outbound.post(d["url"], d["payload"].encode("utf-8"), headers,
                                   self.settings.webhook_allow_private, self.settings.webhook_timeout)
        except outbound.TargetRefused as exc:
            error = str(exc)
        except OSError as exc:
            error = _reason(exc)
        now = time.time()
        if status is not None and 200 <= status < 300:
            self.db.delivered(d["id"], now, status, self.worker_id)
            return
        if error is None:
            error = f"HTTP {status}" + (" (redirects are not followed)" if 300 <= status < 400 else "")
        delay = min(self.settings.webhook_backoff_max, self.settings.webhook_backoff * 2 ** d["attempts"])
        disabled = self.db.failed(d["id"], now, error, status, now + delay, self.settings.webhook_max_failures,
                                  self.worker_id)
        log.warning("webhook delivery %s of subscription %d failed (attempt %d): %s%s", d["message_id"],
                    d["subscription"], d["attempts"] + 1, error, "; subscription disabled" if disabled else "")

    def _renew(self) -> bool:
        """Hold the delivery lease (renewed while less than half of it, or too little for one
        more attempt, is left); False when another process holds it."""
        now = time.time()
        lease = self.settings.webhook_lease
        if self._lease_until - now > max(lease / 2, self.settings.webhook_timeout + 1):
            return True
        if self._lease_until <= now and self.db.lease_owner(now) not in (None, self.worker_id):
            return False  # someone else delivers: a read, not a write, while waiting for it to expire
        if self.db.take_lease(self.worker_id, lease, now):
            if self._lease_until <= now:
                log.info("webhooks: this process (%s) delivers now", self.worker_id)
            self._lease_until = now + lease
            return True
        self._lease_until = 0.0
        return False

    def run_once(self) -> float | None:
        """One round of the thread: produce and deliver while holding the lease. Returns the
        seconds until the next round (None: at the poll interval)."""
        if self.db.cursor() is None or not self._renew():  # no subscription was ever made: nothing to do
            return None
        while self.produce() and not self._stop.is_set():
            self.deliver_due()
        later = self.deliver_due()
        return None if later is None else max(0.01, later - time.time())

    def start(self) -> threading.Thread | None:
        """Start the delivery thread (none with CALENDAR_WEBHOOK_DELIVERY=0)."""
        if not self.settings.webhook_delivery or self._stop.is_set():
            return None
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="calendar-webhooks", daemon=True)
            self._thread.start()
        return self._thread

    def nudge(self) -> None:
        """Look at the branch and the queue now (after a write or a pull in this process)."""
        self._wake.set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            wait = self.settings.webhook_poll
            try:
                after = self.run_once()
                if after is not None:
                    wait = min(wait, after)
            except StateUnavailable:
                self._lease_until = 0.0  # logged by the state database, once per outage
            except (StoreError, OSError, ValueError) as exc:
                log.warning("webhooks: %s", exc)
            except Exception:
                log.exception("webhooks: the delivery round failed")
            self._wake.wait(wait)
            self._wake.clear()

    def close(self) -> None:
        """Stop the thread and give the lease up (another process takes over at once)."""
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(JOIN_SECONDS + self.settings.webhook_timeout)
        self._pool.close()
        if self._lease_until > time.time():
            try:
                self.db.release_lease(self.worker_id)
            except Exception as exc:  # closing must not fail
                log.warning("webhooks: could not release the lease: %s", exc)
        self.db.close()


class DeliveryPool:
    """Delivery attempts on at most ``workers`` threads, one at a time per subscription (so one
    subscription's deliveries keep their commit order while a hanging receiver holds only its
    own worker). ``attempt(delivery)`` makes one attempt; ``done()`` is called after each."""

    def __init__(self, workers: int, attempt, done):
        self._workers = max(1, int(workers))
        self._attempt = attempt
        self._done = done
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._busy: set[int] = set()   # subscriptions with an attempt under way
        self._lock = threading.Lock()
        self._closed = False

    def busy(self) -> set[int]:
        """The subscriptions with an attempt under way. A worker records its attempt in the
        database before it leaves this set, so a subscription missing from a copy taken before
        reading the queue has its last attempt in what the read sees."""
        with self._lock:
            return set(self._busy)

    def start(self, delivery: dict) -> concurrent.futures.Future | None:
        """Start an attempt at ``delivery``; None when its subscription has one under way or the
        pool is closed."""
        sub = delivery["subscription"]
        with self._lock:
            if sub in self._busy or self._closed:
                return None
            self._busy.add(sub)
            if self._executor is None:
                self._executor = concurrent.futures.ThreadPoolExecutor(
                    max_workers=self._workers, thread_name_prefix="calendar-webhook-send")
        try:
            return self._executor.submit(self._run, delivery)
        except RuntimeError:  # shut down: closing
            with self._lock:
                self._busy.discard(sub)
            return None

    def _run(self, delivery: dict) -> None:
        try:
            self._attempt(delivery)
        except Exception:
            log.exception("webhooks: delivery %s failed", delivery.get("message_id"))
        finally:
            with self._lock:
                self._busy.discard(delivery["subscription"])
            self._done()

    def close(self) -> None:
        """Stop taking attempts; wait for those under way (each ends within the timeout)."""
        with self._lock:
            executor, self._executor = self._executor, None
            self._closed = True
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)


def _reason(exc: OSError) -> str:
    """A short reason for a failed connection, without addresses or secrets."""
    if isinstance(exc, socket.timeout) or "timed out" in str(exc):
        return "timed out"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, ConnectionResetError):
        return "connection reset"
    text = str(exc)
    return text if text.startswith("bad answer") else (exc.strerror or type(exc).__name__)
