"""Command line: ``python -m calendar_service COMMAND``.

Commands:
  reindex                      rebuild the search index in full (with a progress bar)
  user add NAME --role ROLE [--email E] [--name N] [--password P]
  user list | user remove NAME | user passwd NAME [--password P]
  user token NAME [--label L] | user revoke NAME TOKEN_ID
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .accounts import ROLES, AccountError, Accounts
from .config import Settings


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


def cmd_import(options) -> int:
    from . import importer
    from .store import GitStore, StoreError

    settings = Settings.from_env()
    store = GitStore(settings.content_dir, settings.branch, (settings.committer_name, settings.committer_email))
    try:
        author = importer.parse_author(options.author) if options.author else None
        items = importer.load(options.file)
        result = importer.import_events(store, items, settings.tz, author=author, message=options.commit_message,
                                        source=Path(options.file).name, progress=importer.progress_bar)
    except (importer.ImportFailure, StoreError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        print("nothing was imported", file=sys.stderr)
        return 2
    finally:
        store.close()
    print(result.summary())
    for singular, old, new in result.remapped[:20]:
        print(f"  {singular} {old} is now {new} (id taken)")
    if len(result.remapped) > 20:
        print(f"  ... and {len(result.remapped) - 20} more (see the commit message)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m calendar_service", description="Calendar service tools.")
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
