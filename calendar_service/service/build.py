"""Making the service: the one place that opens the content repository and everything the
service reads from (accounts, the record catalog and its cache, the search index).

The web app and every command line command that reads or writes the content build the
service here, so they all see the same settings (the git remote among them).
"""
from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import threading

from calendar_service.auth.accounts import Accounts
from calendar_service.auth.limits import Limits
from calendar_service.config import Settings
from calendar_service.domain import file_limits, record as records, snapshot as snapshots
from calendar_service.domain.recurrence import limits as recurrence_limits
from calendar_service.index import search
from calendar_service.index.search import SearchIndex
from calendar_service.service import sample
from calendar_service.service.calendar import CalendarService
from calendar_service.service.webhooks import Webhooks
from calendar_service.storage.catalog import Catalog
from calendar_service.storage.state import StateDB
from calendar_service.storage.store import GitStore, StoreError

log = logging.getLogger(__name__)

RECORDS_CACHE = "records.cache"  # parsed records, kept next to the index (derived data) for a quick restart
CONTENT_FOLDERS = ("events", "venues", "organizers")  # folders whose presence means the directory has content


class NoRepository(LookupError):
    """There is no content repository where the settings say (and the caller would not create one)."""


class Recovering:
    """``store.recover()`` run in a thread beside the rest of a start (at 1,000,000 files its
    ``git diff-index`` is ~0.2 s, on the other core meanwhile): the records and the index are
    read from git's objects and refs, which recovery never changes (it removes stale locks and
    temporary files, refreshes git's index and finishes a write's working tree). ``wait``
    before anything can write (raises what recovery raised)."""

    def __init__(self, store: GitStore):
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(store,), name="calendar-recovery", daemon=True)
        self._thread.start()

    def _run(self, store: GitStore) -> None:
        try:
            store.recover()
        except BaseException as exc:   # raised by ``wait``, in the starting thread
            self._error = exc

    def wait(self) -> None:
        self._thread.join()
        error, self._error = self._error, None
        if error is not None:
            raise error


def build_service(settings: Settings, create: bool = True, recover_in_thread: bool = False,
                  kept_texts=None) -> CalendarService:
    """Open the content repository of ``settings`` and return the service on it.

    With ``create`` a missing repository is created (with the sample calendar when
    ``settings.seed_sample``); without, a missing one raises NoRepository. Either way a write
    a killed process left half-done is finished and, with a git remote, the branch is
    brought in line with the remote first. The caller closes the service (``close()``).
    With ``recover_in_thread`` that finishing runs in a thread while the service is built
    (``service.recovery``, a ``Recovering``): the caller waits for it before anything writes.
    ``kept_texts``: what makes the records' texts kept with the records cache (the web app's
    ``http.own_text.OwnTexts``; ``Catalog.kept_texts``).
    """
    configure_limits(settings)
    configure_caches(settings)
    store = GitStore(settings.content_dir, settings.branch, (settings.committer_name, settings.committer_email),
                     remote=settings.git_remote, remote_branch=settings.git_remote_branch,
                     remote_timeout=settings.remote_timeout)
    if not create and not store.exists():
        raise NoRepository(f"no content repository at {settings.content_dir}")
    background = None
    try:
        open_repository(store, settings, recover=not recover_in_thread)
        if recover_in_thread:
            background = Recovering(store)
        state = StateDB.of(settings)  # webhooks and the limits on guessing share it
        accounts = Accounts(settings.users_file, Limits.from_settings(settings, state))
        catalog = _catalog(store, settings, accounts, kept_texts)
        index = _index(settings)
        loaded, base = _preloaded.get(settings.content_dir.resolve(), (None, None))
        if loaded is not None and catalog.adopt(loaded):
            log.info("starting from the records the serving master loaded (commit %s)", loaded.current_commit)
            if base is not None:
                index.adopt(base)
    except BaseException:
        if background is not None:
            with contextlib.suppress(BaseException):
                background.wait()   # never closing the store under it
        store.close()
        raise
    service = CalendarService(settings, store, catalog, accounts, index)
    service.recovery = background
    service.webhooks = Webhooks(settings, store, catalog, service.history, accounts, state)
    return service


def _index(settings: Settings) -> SearchIndex:
    return SearchIndex(settings.index_dir, settings.tz, getattr(settings, "recurrence_horizon", None))


def _catalog(store: GitStore, settings: Settings, accounts: Accounts, kept_texts=None) -> Catalog:
    catalog = Catalog(store, settings.index_dir / RECORDS_CACHE, author_of=accounts.id_of_email,
                      last_good=(settings.last_good_files, settings.last_good_versions, settings.last_good_commits))
    catalog.kept_texts = kept_texts
    return catalog


# content folder -> (the catalog ``preload`` filled in this process (the serving master), the index
# base it read or None), which the services built in the workers it forks adopt (``Catalog.adopt``,
# ``SearchIndex.adopt``)
_preloaded: dict = {}


def preload(settings: Settings, kept_texts=None) -> int:
    """Load the records of the content repository of ``settings`` in a process that forks the
    workers serving it (the gunicorn master, ``http.serving``), so the workers start from them
    and share their memory pages, copy-on-write, instead of each loading its own copy.

    Only data stays behind: the git processes this load started are closed and no thread runs
    when this returns (a fork takes neither along). Without a repository, or when it cannot be
    read, nothing is kept and the workers load as usual. The index base of the records' commit
    is read too (its columns shared alike) when the index on disk is at that commit. Returns the
    number of files loaded."""
    configure_limits(settings)
    search.import_searching()
    committer = (settings.committer_name, settings.committer_email)
    with contextlib.closing(GitStore(settings.content_dir, settings.branch, committer)) as store:
        try:
            if not store.exists() or store.head() is None:
                return 0
            accounts = Accounts(settings.users_file)   # authors of files written without an account id
            catalog = _catalog(store, settings, accounts, kept_texts)
            snapshot = catalog.current()
            catalog.wait_for_cache()
        except Exception:   # never what stops the server from starting: each worker then loads its own
            log.exception("could not load the records before starting the workers (each loads its own)")
            return 0
        try:
            base = _index(settings).read_base(snapshot, store)
        except Exception:   # the workers read (or repair) the index themselves
            log.exception("could not read the search index before starting the workers (each reads its own)")
            base = None
    _preloaded[settings.content_dir.resolve()] = (catalog, base)
    return len(snapshot.files)


def configure_limits(settings: Settings) -> None:
    """Read every content file, and expand every series, with the limits of ``settings`` from now
    on (the serving master's preload as the workers do: the records cache's version names them)."""
    file_limits.configure(file_limits.Limits(
        file_bytes=settings.max_file_bytes, nesting=settings.max_nesting, keys=settings.max_keys,
        items=settings.max_items, string_length=settings.max_string_length))
    recurrence_limits.configure(getattr(settings, "max_occurrences", None),
                                getattr(settings, "recurrence_horizon", None))


def configure_caches(settings: Settings) -> None:
    """Bound this process's caches of what was read by the sizes of ``settings``: the presented
    text the snapshots remember and the events held unpacked (each worker fills its own; those
    the serving master made before the fork follow too)."""
    snapshots.MEMO_BYTES = settings.presented_memo_bytes
    records.RECENT.resize(settings.recent_records)


def open_repository(store: GitStore, settings: Settings, recover: bool = True) -> None:
    """Create the content repository (with the sample calendar) when it does not exist yet.

    Several gunicorn workers may start at once: a lock on the content folder lets one of
    them create the repository while the others wait. With a git remote, the branch is
    pulled first; the sample is written (and pushed) only when the remote branch is empty,
    never while the remote cannot be reached (that would start an unrelated history).
    """
    settings.content_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(settings.content_dir, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        created = not store.exists()
        store.init()
        remote_ok = _first_pull(store) if settings.git_remote else True
        has_content = any((settings.content_dir / name).exists() for name in CONTENT_FOLDERS)
        if created and settings.seed_sample and store.head() is None and not has_content and remote_ok:
            sample.seed(store, settings.site_timezone, settings.tz)
            log.info("created the sample calendar in %s", settings.content_dir)
            if settings.git_remote:
                _first_pull(store)  # pushes the sample to the empty remote branch
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    if recover:   # else the caller does (``build_service``'s ``recovering``)
        store.recover()


def _first_pull(store: GitStore) -> bool:
    """Bring a starting service's branch in line with the remote; False when it cannot be reached."""
    store.recover()  # a journal left by a killed process is finished before the branch moves again
    try:
        store.pull()
        return True
    except StoreError as exc:
        log.warning("could not pull from the git remote at start: %s", exc)
        return False
