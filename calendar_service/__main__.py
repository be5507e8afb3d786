"""Command line: ``python -m calendar_service COMMAND``.

Commands:
  reindex                      rebuild the search index in full (with a progress bar)
  user add NAME --role ROLE [--email E] [--name N] [--password P]
  user list | user remove NAME | user passwd NAME [--password P]
  user token NAME [--label L] | user revoke NAME TOKEN_ID
  trash list [--type T] [--older-than DAYS]
  trash empty --user LOGIN [--type T] [--older-than DAYS] [--yes]
"""
from __future__ import annotations

import argparse
import sys

from .accounts import ROLES, AccountError, Accounts
from .config import Settings
from .errors import ApiError


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


def cmd_reindex(options) -> int:
    import time

    from .catalog import Catalog
    from .search import SearchIndex, progress_bar
    from .store import GitStore

    settings = Settings.from_env()
    store = GitStore(settings.content_dir, settings.branch)
    if not store.exists():
        print(f"error: no content repository at {settings.content_dir}", file=sys.stderr)
        return 2
    started = time.monotonic()
    snapshot = Catalog(store).current()
    loaded = time.monotonic()
    count = SearchIndex(settings.index_dir, settings.tz).rebuild_now(snapshot, progress_bar)
    done = time.monotonic()
    rate = count / (done - loaded) if done > loaded else 0
    print(f"indexed {count} events of commit {snapshot.commit[:12] if snapshot.commit else '-'} "
          f"(read {len(snapshot.files)} files in {loaded - started:.1f} s, indexed in {done - loaded:.1f} s, "
          f"{rate:.0f} events/s)")
    for problem in snapshot.problems:
        print(f"skipped: {problem}", file=sys.stderr)
    store.close()
    return 0


def cmd_trash(options) -> int:
    """List the trash, or delete trashed records for good in one commit authored by ``--user``."""
    from .catalog import Catalog
    from .resources import RESOURCES
    from .service import CalendarService
    from .store import GitStore

    settings = Settings.from_env()
    store = GitStore(settings.content_dir, settings.branch, (settings.committer_name, settings.committer_email))
    if not store.exists():
        print(f"error: no content repository at {settings.content_dir}", file=sys.stderr)
        return 2
    accounts = _accounts()
    service = CalendarService(settings, store, Catalog(store), accounts)
    try:
        resources = [RESOURCES[options.type]] if options.type else None
        records = service.trashed(resources, options.older_than)
        for record in records:
            print(f"{record.resource.singular}\t{record.id}\t{record.path}\t{record.title}")
        if options.action == "list" or not records:
            print(f"{len(records)} record(s) in the trash")
            return 0
        user = accounts.get(options.user)
        if user is None:
            print(f"error: no account {options.user!r}", file=sys.stderr)
            return 2
        if not options.yes:
            answer = input(f"Delete these {len(records)} record(s) for good (git history keeps them)? [y/N] ")
            if answer.strip().lower() not in ("y", "yes"):
                print("nothing deleted")
                return 1
        try:
            removed = service.empty_trash(records, user)
        except ApiError as exc:
            print(f"error: {exc.message}" if exc.status != 403 else
                  f"error: {user.login} ({user.role}) may not empty the trash; editors and administrators may",
                  file=sys.stderr)
            return 2
        print(f"deleted {removed} record(s) for good in one commit by {user.login}")
        return 0
    finally:
        store.close()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m calendar_service", description="Calendar service tools.")
    commands = parser.add_subparsers(dest="command", required=True)
    reindex = commands.add_parser("reindex", help="rebuild the search index (CALENDAR_INDEX_DIR) in full")
    reindex.set_defaults(func=cmd_reindex)
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
        action.add_argument("--older-than", type=float, metavar="DAYS", help="only records trashed this long ago")
        if name == "empty":
            action.add_argument("--user", required=True, help="the account (editor or administrator) the commit "
                                                              "is authored by")
            action.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    trash.set_defaults(func=cmd_trash)
    return parser


def main(argv=None) -> int:
    options = build_parser().parse_args(argv)
    try:
        return options.func(options)
    except (AccountError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
