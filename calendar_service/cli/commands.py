"""Command line: ``python -m calendar_service COMMAND``.

Commands:
  reindex                      rebuild the search index in full (with a progress bar)
  user add NAME --role ROLE [--email E] [--name N] [--password P]
  user list | user remove NAME | user passwd NAME [--password P]
  user token NAME [--label L] | user revoke NAME TOKEN_ID
  trash list [--type T] [--older-than DAYS]
  trash empty --user LOGIN [--type T] [--older-than DAYS] [--yes]
  validate [CONTENT_DIR | PATH...] [--changed [BASE]] [--allow-warnings]
                               check every content file as the service reads it, or only yours
                               (exit 0 ok, 1 problems, 2 wrong use)
  status [-C DIR | DIR]        the status view as JSON: head, remote, last pull, refused commit, index, skipped;
                               in an editor's clone: head, upstream ahead/behind, files with problems
  new event|venue|organizer|category|tag --title T [--start S --end E] [--dir CONTENT_DIR]
                               write a new record file with the next free id (not committed)
  diff [BASE [HEAD]] [--format text|markdown] [-C DIR]
                               what a change does to the calendar: records added, removed,
                               moved, fields, occurrences, broken references, overlaps
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from dataclasses import replace
from pathlib import Path

from calendar_service.auth.accounts import ROLES, AccountError, Accounts
from calendar_service.cli import clone
from calendar_service.cli import validate as validate_command
from calendar_service.config import Settings, configuration_page, effective_settings
from calendar_service.domain import record_files
from calendar_service.domain.resources import RESOURCES
from calendar_service.service import errors as service_errors
from calendar_service.service import layout
from calendar_service.service.build import NoRepository, build_service
from calendar_service.service.calendar import CalendarService
from calendar_service.service.errors import ServiceError
from calendar_service.storage.clone import Clone

# exit statuses
FAILED = 2          # a wrong argument, a missing account or repository, a refused write
DECLINED = 1        # the user answered no (trash empty)
PROBLEMS = 1        # validate found problems
NO_REPOSITORY = FAILED

PROGRESS_WIDTH = 40  # characters of the progress bar
SHORT_COMMIT = 12    # hex digits of a commit id shown
REMAPPED_SHOWN = 20  # imported records whose id was taken, listed one by one


def progress_bar(stage: str, done: int, total: int) -> None:
    """A plain progress bar on standard error, for the long commands (reindex, import)."""
    width = PROGRESS_WIDTH
    filled = int(width * done / total) if total else width
    sys.stderr.write(f"\r{stage:<9} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
    if done >= total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def _accounts() -> Accounts:
    return Accounts(Settings.from_env().users_file)


def cmd_user(options) -> int:
    accounts = _accounts()
    action = options.action
    if action == "add":
        user, password = accounts.add(options.login, options.role, email=options.email, name=options.name,
                                      password=options.password)
        print(f"created {user.role} {user.login} (id {user.id}, {user.email})")
        if not options.password:
            print(f"application password: {password}")
            print("It is shown once; only its hash is stored.")
    elif action == "list":
        for user in accounts.users():
            print(f"{user.id}\t{user.login}\t{user.role}\t{user.email}\t{len(user.passwords)} password(s)")
    elif action == "remove":
        accounts.remove(options.login)
        print(f"removed {options.login}")
    elif action == "passwd":
        password = accounts.set_password(options.login, options.password)
        print("password replaced" if options.password else f"new application password: {password}")
    elif action == "token":
        token_id, password = accounts.add_token(options.login, options.label)
        print(f"application password {token_id}: {password}")
    elif action == "revoke":
        accounts.revoke_token(options.login, options.token_id)
        print(f"revoked {options.token_id}")
    return 0


def _service(settings: Settings, create: bool = False) -> CalendarService | None:
    """The service on the configured content repository (see ``build_service``); None, with a
    message, when there is no repository and ``create`` is false."""
    try:
        return build_service(settings, create=create)
    except NoRepository as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None


def cmd_reindex(options) -> int:
    import time

    service = _service(Settings.from_env())
    if service is None:
        return NO_REPOSITORY
    try:
        started = time.monotonic()
        service.assign_ids()   # a command gives ids inline (a service's follower thread does it otherwise)
        snapshot = service.snapshot()
        loaded = time.monotonic()
        count = service.index.rebuild_now(snapshot, lambda done, total: progress_bar("indexing", done, total))
        done = time.monotonic()
        rate = count / (done - loaded) if done > loaded else 0
        print(f"indexed {count} events of commit {snapshot.commit[:SHORT_COMMIT] if snapshot.commit else '-'} "
              f"(read {len(snapshot.files)} files in {loaded - started:.1f} s, indexed in {done - loaded:.1f} s, "
              f"{rate:.0f} events/s)")
        for problem in snapshot.problems:
            print(f"skipped: {problem}", file=sys.stderr)
        return 0
    finally:
        service.close()


def cmd_trash(options) -> int:
    """List the trash, or delete trashed records for good in one commit authored by ``--user``."""
    service = _service(Settings.from_env())
    if service is None:
        return NO_REPOSITORY
    try:
        resources = [RESOURCES[options.type]] if options.type else None
        records = service.trashed(resources, options.older_than)
        for record in records:
            print(f"{record.resource.singular}\t{record.id}\t{record.path}\t{record.title}")
        if options.action == "list" or not records:
            print(f"{len(records)} record(s) in the trash")
            return 0
        return _write_as(service, options, f"Delete these {len(records)} record(s) for good (git history keeps "
                         "them)?", "nothing deleted", "empty the trash",
                         lambda user: f"deleted {service.empty_trash(records, user)} record(s) for good in one "
                         f"commit by {user.login}")
    finally:
        service.close()


def cmd_file_by_month(options) -> int:
    """Move the event files at the top of events/ into their month folders in one commit by ``--user``."""
    service = _service(Settings.from_env())
    if service is None:
        return NO_REPOSITORY
    def move(user) -> str:
        moved = layout.file_by_month(service, user)
        return (f"moved {len(moved)} event file(s) into their month folders in one commit by {user.login}" if moved
                else "no event file at the top of events/ to move: nothing committed")

    try:
        return _write_as(service, options, "Move every event file at the top of events/ into events/YYYY/MM/, in "
                         "one commit?", "nothing moved", "move every file", move)
    finally:
        service.close()


def _write_as(service: CalendarService, options, question: str, declined: str, what: str, write) -> int:
    """Run ``write(user)`` (it returns what it did, to print) as the account ``--user``, after asking
    ``question`` unless ``--yes``; print the outcome and return the exit status."""
    user = service.accounts.get(options.user)
    if user is None:
        print(f"error: no account {options.user!r}", file=sys.stderr)
        return FAILED
    if not options.yes:
        answer = input(f"{question} [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print(declined)
            return DECLINED
    try:
        done = write(user)
    except ServiceError as exc:
        print(f"error: {exc.message}" if exc.kind != service_errors.FORBIDDEN else
              f"error: {user.login} ({user.role}) may not {what}; editors and administrators may", file=sys.stderr)
        return FAILED
    print(done)
    return 0


def cmd_status(options) -> int:
    """Print the status view (the same as GET /calendar/events/v1/status) as JSON; in an
    editor's clone, which has no service, what git knows (see ``status_of_clone``)."""
    import json

    content = clone.find_content(options.chdir or options.directory)
    if not content.is_service_dir:
        return status_of_clone(content.root)
    settings = Settings.from_env() if content.how != "given" else replace(Settings.from_env(), content_dir=content.root)
    service = _service(settings)
    if service is None:
        return NO_REPOSITORY
    try:
        print(json.dumps(service.status(), indent=2))
        return 0
    finally:
        service.close()


def status_of_clone(root: Path) -> int:
    """A clone's status as JSON: its head, its branch against the upstream (ahead/behind), the
    files with problems as validate finds them. The service's fields (last pull, refused
    commit, index) are the service's own: GET /status of the service says them."""
    import json

    from calendar_service.service.build import configure_limits

    configure_limits(Settings.from_env())
    state = Clone(root).state()
    _, problems = validate_command.check_tree(root)
    state["problems"] = [str(p) for p in sorted(problems, key=lambda p: (p.path, p.line))]
    state["files_with_problems"] = len({p.path for p in problems})
    state["service"] = ("a clone has no service: the last pull, a refused commit and the search index are the "
                        "service's, in GET /calendar/events/v1/status")
    print(json.dumps(state, indent=2))
    return 0


def cmd_new(options) -> int:
    """Write a new record file named by its slug, without an id (the service gives it one), print
    its path and exit 0; exit 2 without writing when the file exists or a value is wrong.
    Nothing is committed: the editor reviews and commits the file."""
    from calendar_service.domain import dates
    from calendar_service.domain import text
    from calendar_service.storage.catalog import load_directory

    resource = next(r for r in RESOURCES.values() if r.singular == options.kind)
    root = clone.find_content(options.dir).root   # refused outside a content repository
    settings = Settings.from_env()
    snapshot = load_directory(root)
    title = options.title.strip()
    if not title:
        raise ValueError("--title must not be empty")
    if options.slug is not None and not record_files.is_safe_slug(options.slug):
        raise ValueError(f"--slug {options.slug!r}: use lowercase letters, digits, '-' or '_'")
    # the API's slug rule (a Windows device name such as ``con`` gets a suffix)
    slug = text.slugify(options.slug or title) or resource.singular
    holder = snapshot.get_slug(resource, slug) if snapshot else None
    if holder is not None:
        raise ValueError(f"{root / holder.path} exists already with the slug {slug!r}; choose another --slug")
    now = dates.fmt(dates.utc_now())
    # no id: the service gives the file one when it reads it (an id picked here could be handed
    # out by the API meanwhile)
    data: dict = {resource.title_key: title, "slug": slug}
    if resource.kind == "post":
        data.update(status=options.status, date_utc=now, modified_utc=now)
    if options.description:
        data["description"] = options.description
    if resource is RESOURCES["events"]:
        if not options.start or not options.end:
            raise ValueError("an event needs --start and --end")
        zone_name = options.timezone or settings.site_timezone
        if not dates.is_valid_timezone(zone_name):
            raise ValueError(f"unknown time zone {zone_name!r}")
        zone = dates.zone(zone_name, settings.tz)
        try:
            start, end = (dates.fmt(dates.parse(v, zone)) for v in (options.start, options.end))
        except dates.DateParseError:
            raise ValueError("--start and --end must be dates, e.g. '2026-12-24 18:00' or 'tomorrow 8pm'") from None
        if end < start:
            raise ValueError("--end is before --start")
        data.update(start_date=start, end_date=end, timezone=zone_name)
        if options.repeat:
            from calendar_service.domain.recurrence import parse_repeat_phrase
            try:
                data["recurrence"] = parse_repeat_phrase(options.repeat, dates.read_local(start, zone), zone)
            except ValueError as exc:
                raise ValueError(f"--repeat: {exc}") from None
    elif options.start or options.end or options.repeat:
        raise ValueError("--start, --end and --repeat are for events only")
    path = record_files.path_for(resource, slug, data)   # an event goes to the folder of its month
    target = root / path
    if target.exists():
        raise ValueError(f"{target} exists already; choose another --slug")
    # an empty ``id:`` line for the service to fill in: its id commit then merges with the editor's next edits
    content = record_files.with_id_placeholder(resource, record_files.dump(resource, data))
    record, problems = record_files.parse(path, content)
    if record is None or problems:  # never write a file validate would refuse
        raise ValueError("; ".join(str(p) for p in problems) or "the record could not be written")
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "xb") as handle:  # "x": never overwrite, even if the file appeared meanwhile
        handle.write(content)
    print(target)
    print(next_steps(root, target), file=sys.stderr)
    return 0


def cmd_diff(options) -> int:
    from calendar_service.cli.diff import cmd_diff as run
    return run(options, clone.find_content(options.dir).root)


def next_steps(root: Path, target: Path) -> str:
    """What an editor does with a file ``new`` wrote (printed on standard error: standard
    output stays the path alone, for scripts)."""
    try:
        shown = os.path.relpath(target)
        relative = target.relative_to(root).as_posix()
    except ValueError:
        shown = relative = str(target)
    return (f"Next steps:\n"
            f"  1. edit {shown} if you like, then check it: python -m calendar_service validate {shown}\n"
            f"  2. commit it: git add {relative} && git commit -m 'Add {target.stem}'\n"
            f"  3. push: git push\n"
            f"  4. the service fills in its id: line in a commit of its own; git pull before you edit it again")


def cmd_settings(options) -> int:
    """Print the settings: this environment's values, or (``--markdown``) the configuration page."""
    if options.markdown:
        sys.stdout.write(configuration_page())
        return 0
    for variable, value in effective_settings(Settings.from_env()):
        print(f"{variable}={value}")
    return 0


def cmd_state_copy(options) -> int:
    """Copy the webhook subscriptions and their queue from a SQLite state directory into the state
    database this environment names (CALENDAR_STATE_URL): moving from one machine to several."""
    from calendar_service.storage.state import FILE_NAME, StateDB, StateUnavailable

    settings = Settings.from_env()
    if not settings.state_url:
        raise ValueError("CALENDAR_STATE_URL is not set: there is no PostgreSQL state database to copy into")
    source_dir = Path(options.source or settings.state_dir)
    if not (source_dir / FILE_NAME).exists():
        raise ValueError(f"no state database ({FILE_NAME}) in {source_dir}")
    source, target = StateDB(source_dir), StateDB.of(settings)
    try:
        counts = target.copy_from(source)
    except StateUnavailable:
        raise ValueError(f"the state database {target.dialect.describe()} cannot be reached: nothing was copied") from None
    finally:
        source.close()
        target.close()
    print(f"copied {counts['subscriptions']} subscriptions and {counts['deliveries']} deliveries "
          f"from {source_dir / FILE_NAME} to {target.dialect.describe()}")
    return 0


def cmd_import(options) -> int:
    from calendar_service.cli import importer
    from calendar_service.storage.store import StoreError

    # an import into a new repository creates it empty: the imported events are its content
    settings = replace(Settings.from_env(), seed_sample=False)
    service = build_service(settings)
    try:
        author = importer.parse_author(options.author) if options.author else None
        items = importer.load(options.file)
        result = importer.import_events(service.store, items, settings.tz, author=author,
                                        message=options.commit_message, source=Path(options.file).name,
                                        progress=progress_bar, catalog=service.catalog)
        if service.index is not None:
            # the search index takes in what was imported now: the next start lists from it at once
            service.assign_ids()
            service.index.update_now(service.snapshot(), service.store,
                                     lambda done, total: progress_bar("indexing", done, total))
    except (importer.ImportFailure, StoreError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        print("nothing was imported", file=sys.stderr)
        return FAILED
    finally:
        service.close()
    print(result.summary())
    for singular, old, new in result.remapped[:REMAPPED_SHOWN]:
        print(f"  {singular} {old} is now {new} (id taken)")
    if len(result.remapped) > REMAPPED_SHOWN:
        print(f"  ... and {len(result.remapped) - REMAPPED_SHOWN} more (see the commit message)")
    return 0


MAX_DAYS = 100_000  # about 270 years: any larger --older-than is surely a typo


def days(value: str) -> float:
    """A number of days for ``--older-than``: finite, from 0 to MAX_DAYS."""
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not 0 <= number <= MAX_DAYS:  # also refuses nan and infinities
        raise argparse.ArgumentTypeError(f"expected a number of days from 0 to {MAX_DAYS}, got {value!r}")
    return number


class _Parser(argparse.ArgumentParser):
    """Argument errors are one clear line (no usage block) and exit 2, like every other CLI error."""

    def error(self, message):
        self.exit(FAILED, f"error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m calendar_service", description="Calendar service tools.")
    commands = parser.add_subparsers(dest="command", required=True)
    reindex = commands.add_parser("reindex", help="rebuild the search index (CALENDAR_INDEX_DIR) in full")
    reindex.set_defaults(func=cmd_reindex)
    imp = commands.add_parser("import", help="import events (The Events Calendar's REST API JSON) as one commit")
    imp.add_argument("file", help="a list response ({\"events\": [...]}), an event object or a list of events")
    imp.add_argument("--commit-message", help="default: says what was imported")
    imp.add_argument("--author", help='commit author as "Name <email>" (default: the service identity)')
    imp.set_defaults(func=cmd_import)
    user = commands.add_parser("user", help="manage accounts (users file: CALENDAR_USERS_FILE)")
    actions = user.add_subparsers(dest="action", required=True)
    add = actions.add_parser("add", help="create an account")
    add.add_argument("login")
    add.add_argument("--role", required=True, choices=ROLES)
    add.add_argument("--email")
    add.add_argument("--name", help="display name, used as the commit author name")
    add.add_argument("--password", help="default: generate one and print it")
    actions.add_parser("list", help="list accounts")
    remove = actions.add_parser("remove", help="delete an account")
    remove.add_argument("login")
    passwd = actions.add_parser("passwd", help="replace all of an account's passwords by one")
    passwd.add_argument("login")
    passwd.add_argument("--password")
    token = actions.add_parser("token", help="issue one more application password")
    token.add_argument("login")
    token.add_argument("--label", default="token")
    revoke = actions.add_parser("revoke", help="revoke one application password")
    revoke.add_argument("login")
    revoke.add_argument("token_id")
    user.set_defaults(func=cmd_user)
    trash = commands.add_parser("trash", help="list or empty the trash (trashed events, venues, organizers)")
    trash_actions = trash.add_subparsers(dest="action", required=True)
    for name, text in (("list", "list trashed records"),
                       ("empty", "delete trashed records for good in one commit (git history keeps them)")):
        action = trash_actions.add_parser(name, help=text)
        action.add_argument("--type", choices=("events", "venues", "organizers"), help="only this kind of record")
        action.add_argument("--older-than", type=days, metavar="DAYS", help="only records trashed this long ago")
        if name == "empty":
            action.add_argument("--user", required=True, help="the account (editor or administrator) the commit "
                                                              "is authored by")
            action.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    trash.set_defaults(func=cmd_trash)

    filing = commands.add_parser("file-by-month", help="move the event files at the top of events/ into "
                                                        "events/YYYY/MM/ in one commit")
    filing.add_argument("--user", required=True, help="the account (editor or administrator) the commit is authored by")
    filing.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    filing.set_defaults(func=cmd_file_by_month)

    validate = commands.add_parser("validate", help="check the content files as the service reads them")
    validate.add_argument("paths", nargs="*", metavar="PATH",
                          help="check only these files (relative to here or to the content repository; problems "
                               "elsewhere do not fail the run); one directory: the content repository to check "
                               "in full (default: the clone you are in, else CALENDAR_CONTENT_DIR)")
    validate.add_argument("--changed", nargs="?", const=validate_command.CHANGED_DEFAULT, metavar="BASE",
                          help="check only the files changed between BASE (default: the merge base with the "
                               "upstream branch, else HEAD) and the working tree, untracked ones too")
    validate.add_argument("--allow-warnings", action="store_true",
                          help="exit 0 when only warnings are found (unknown keys, slug not matching the file name)")
    validate.set_defaults(func=validate_command.cmd_validate)
    status = commands.add_parser("status", help="print the state of the content repository, the git remote "
                                                 "(last pull, refused commit), the index and skipped files as JSON")
    status.add_argument("directory", nargs="?", help="a clone or the service's content directory (default: the "
                                                      "clone you are in, else CALENDAR_CONTENT_DIR)")
    status.add_argument("-C", dest="chdir", metavar="DIR", help="the same as DIRECTORY")
    status.set_defaults(func=cmd_status)
    state = commands.add_parser("state", help="the service's own state database (webhook subscriptions, limits)")
    state_actions = state.add_subparsers(dest="action", required=True)
    copy = state_actions.add_parser("copy", help="copy the subscriptions and their queue from a SQLite state directory "
                                                 "into CALENDAR_STATE_URL's database (stop the service first)")
    copy.add_argument("--from", dest="source", metavar="DIR", help="the SQLite state directory (default: "
                                                                   "CALENDAR_STATE_DIR)")
    copy.set_defaults(func=cmd_state_copy)
    settings = commands.add_parser("settings", help="print the settings this environment gives (see docs/configuration.md)")
    settings.add_argument("--markdown", action="store_true", help="print the configuration page made from the settings")
    settings.set_defaults(func=cmd_settings)
    new = commands.add_parser("new", help="write a new record file (not committed)")
    new.add_argument("kind", choices=[r.singular for r in RESOURCES.values()])
    new.add_argument("--title", required=True, help="title (events), name (venues, organizers, terms)")
    new.add_argument("--start", help="event start, in the event's time zone")
    new.add_argument("--end", help="event end, in the event's time zone")
    new.add_argument("--timezone", help="event time zone (default: CALENDAR_TIMEZONE)")
    new.add_argument("--repeat", help='make the event a recurring series: a phrase such as "every tuesday until '
                     '2027-06-30", "every other week", "on the last friday of the month", "10 times", or an RRULE')
    new.add_argument("--slug", help="default: made from the title")
    new.add_argument("--status", default="publish", choices=("publish", "draft", "pending", "private"))
    new.add_argument("--description")
    new.add_argument("--dir", help="content repository (default: the clone you are in, else CALENDAR_CONTENT_DIR)")
    new.set_defaults(func=cmd_new)

    diff = commands.add_parser("diff", help="what a content change does to the calendar (for a pull request's review)")
    diff.add_argument("base", nargs="?", help="default: the merge base of HEAD with its upstream branch")
    diff.add_argument("head", nargs="?", help="default: the working tree")
    diff.add_argument("--format", choices=("text", "markdown"), default="text")
    diff.add_argument("-C", dest="dir", help="the clone (default: the one the current directory is in)")
    diff.set_defaults(func=cmd_diff)
    return parser


def main(argv=None) -> int:
    options = build_parser().parse_args(argv)
    try:
        return options.func(options)
    except (AccountError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return FAILED
    except BrokenPipeError:
        # the reader went away (``settings | head``): nothing more to say, and no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
