"""Readable files: the API writes references as slugs (ids still read), a slug rename rewrites
every file naming the old slug in the same commit, a venue's region is written once, and a file
renamed by hand keeps its name on API writes. All through the real app, git and index."""
from __future__ import annotations

import yaml

from calendar_service.cli.commands import main as cli_main

from conftest import flat
from test_follow_git import event_file, listed


def front_matter(repo, path: str) -> dict:
    return yaml.safe_load((repo.root / path).read_text().split("---")[1])


def test_api_create_writes_references_as_slugs(admin, repo, factory):
    venue = factory.venue(venue="Riverside Hall")
    organizer = factory.organizer(organizer="City Arts")
    parent = factory.category(name="Music")
    child = factory.category(name="Jazz", parent=parent["id"])
    event = factory.event(title="Slugged", venue=venue["id"], organizer=[organizer["id"]],
                          categories=[child["id"]], tags="outdoor")
    data = front_matter(repo, repo.path_of(event['slug']))
    assert (data["venue"], data["organizer"], data["categories"], data["tags"]) == (
        ["riverside-hall"], ["city-arts"], ["jazz"], ["outdoor"])
    assert yaml.safe_load((repo.root / "categories/jazz.yaml").read_text())["parent"] == "music"
    assert admin.get(f"/categories/{child['id']}").get_json()["parent"] == parent["id"]
    served = admin.get(f"/events/{event['id']}").get_json()
    assert served["venue"]["id"] == venue["id"] and served["categories"][0]["parent"] == parent["id"]


def test_old_files_with_ids_still_read_and_digit_slugs_are_slugs(app, anon, repo, factory):
    by_id = factory.venue(venue="By Id Hall")
    digits = factory.venue(venue="2024")          # the slug "2024"
    assert digits["slug"] == "2024"
    repo.commit_file("events/old.md", event_file(500, "Old style", f"venue: [{by_id['id']}]\n"), "Old")
    repo.commit_file("events/digits.md", event_file(501, "Digit slug", "venue: ['2024']\n"), "Digits")
    assert anon.get("/events/500").get_json()["venue"]["id"] == by_id["id"]
    assert anon.get("/events/501").get_json()["venue"]["id"] == digits["id"]
    assert listed(app, anon, f"&venue={by_id['id']}") == ["Old style"]
    assert listed(app, anon, f"&venue={digits['id']}") == ["Digit slug"]
    # the API writes a digit slug quoted, so it reads back as a slug
    assert "'2024'" in (repo.root / "venues/2024.yaml").read_text()


def test_slug_rename_rewrites_referencing_files_in_one_commit(app, admin, anon, repo, factory):
    tag = factory.tag(name="Old Tag")
    parent = factory.category(name="Old Parent")
    child = factory.category(name="Kid", parent=parent["id"])
    api_event = factory.event(title="By API", tags=[tag["id"]], categories=[parent["id"]])
    repo.commit_file("events/hand.md", event_file(600, "By hand", "tags: [old-tag]\n"), "Hand")
    repo.commit_file("events/by-id.md", event_file(601, "By id", f"tags: [{tag['id']}]\n"), "By id")
    by_id_before = (repo.root / "events/by-id.md").read_text()

    before = repo.count()
    r = admin.post(f"/tags/{tag['id']}", json={"slug": "new-tag"})
    assert r.status_code == 200 and r.get_json()["slug"] == "new-tag"
    assert repo.count() == before + 1
    changed = repo("show", "--no-renames", "--name-only", "--format=", "HEAD").split()
    assert sorted(flat(changed)) == sorted(
        [f"events/{api_event['slug']}.md", "events/hand.md", "tags/new-tag.yaml", "tags/old-tag.yaml"])
    assert front_matter(repo, "events/hand.md")["tags"] == ["new-tag"]
    assert front_matter(repo, repo.path_of(api_event['slug']))["tags"] == ["new-tag"]
    assert (repo.root / "events/by-id.md").read_text() == by_id_before  # by id: still right, untouched
    assert listed(app, anon, f"&tags={tag['id']}") == ["By hand", "By id"]  # By API is not in 2030
    assert admin.get(f"/tags/{tag['id']}").get_json()["count"] == 3

    before = repo.count()
    assert admin.post(f"/categories/{parent['id']}", json={"slug": "new-parent"}).status_code == 200
    assert repo.count() == before + 1
    assert yaml.safe_load((repo.root / "categories/kid.yaml").read_text())["parent"] == "new-parent"
    assert front_matter(repo, repo.path_of(api_event['slug']))["categories"] == ["new-parent"]
    assert admin.get(f"/categories/{child['id']}").get_json()["parent"] == parent["id"]
    assert [e["title"] for e in anon.get(f"/events?categories={parent['id']}").get_json()["events"]] == ["By API"]
    assert cli_main(["validate", "--allow-warnings", str(repo.root)]) == 0


def test_venue_region_is_written_once_and_stateprovince_is_an_alias(admin, anon, repo, factory, capsys):
    venue = factory.venue(venue="Region Hall", country="US", state="IL")
    text = (repo.root / "venues/region-hall.yaml").read_text()
    assert "state: IL" in text and "stateprovince" not in text
    assert venue["stateprovince"] == "IL"
    # an older file holding both, hand-edited so they differ: one value served, validate warns
    repo.commit_file("venues/region-hall.yaml", text.replace("state: IL", "state: NY") + "stateprovince: IL\n")
    served = anon.get(f"/venues/{venue['id']}").get_json()
    assert (served["state"], served["stateprovince"]) == ("NY", "NY")
    capsys.readouterr()
    assert cli_main(["validate", str(repo.root)]) == 1
    assert "stateprovince 'IL' differs from state 'NY'" in capsys.readouterr().out
    # the alias alone fills the region; the next API write keeps one key
    repo.commit_file("venues/region-hall.yaml", text.replace("state: IL", "stateprovince: WI"))
    assert anon.get(f"/venues/{venue['id']}").get_json()["state"] == "WI"
    assert admin.post(f"/venues/{venue['id']}", json={"phone": "555"}).status_code == 200
    written = (repo.root / "venues/region-hall.yaml").read_text()
    assert "state: WI" in written and "stateprovince" not in written


def test_hand_renamed_file_keeps_its_name_and_a_slug_change_moves_a_matching_one(admin, repo, factory):
    event = factory.event(title="Renamed")
    path = repo.path_of("renamed")
    folder = path.rsplit("/", 1)[0]
    repo("mv", path, f"{folder}/by-editor.md")
    repo("-c", "user.name=Editor", "-c", "user.email=e@example.org", "commit", "-q", "-m", "Rename")
    assert admin.post(f"/events/{event['id']}", json={"title": "Renamed, edited"}).status_code == 200
    assert (repo.root / folder / "by-editor.md").exists() and not (repo.root / path).exists()
    assert admin.post(f"/events/{event['id']}", json={"slug": "other"}).status_code == 200
    assert front_matter(repo, f"{folder}/by-editor.md")["slug"] == "other"
    assert not list((repo.root / "events").rglob("other.md"))
    # a file named after its slug follows a slug change
    second = factory.event(title="Follows")
    assert admin.post(f"/events/{second['id']}", json={"slug": "followed"}).status_code == 200
    assert (repo.root / folder / "followed.md").exists() and not (repo.root / folder / "follows.md").exists()


def test_an_event_file_saved_with_a_byte_order_mark_reads(app, anon, admin, repo):
    """Some Windows editors start a UTF-8 file with a byte order mark: the front matter is still
    the front matter, and an API update keeps the file readable."""
    repo.commit_file("events/bom.md", "\ufeff" + event_file(502, "Marked", "cost: '5'\n"), "Saved on Windows")
    served = anon.get("/events/502")
    assert served.status_code == 200, served.get_json()
    assert served.get_json()["title"] == "Marked" and served.get_json()["cost"] == "5"
    assert admin.post("/events/502", json={"cost": "6"}).status_code == 200
    assert anon.get("/events/502").get_json()["cost"] == "6"
