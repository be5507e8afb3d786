"""/doc and the namespace index: a valid OpenAPI document covering every route of the table, the
two documents agreeing, and both in nine languages (parameter and path segment) from gettext
catalogs that are complete and extracted from the code."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po
from openapi_spec_validator import validate

from calendar_service.http import docs
from calendar_service.http import i18n
from calendar_service.http.urls import Urls
from calendar_service.http.arguments import COMMON_ARGS, Arg
from calendar_service.http.checks import NONEMPTY
from calendar_service.http.handlers.audit import handle_changes
from calendar_service.http.routes import ROUTES
from calendar_service.http.routing import Endpoint, Route
from conftest import API

LANGUAGES = ["nl", "en", "fr", "de", "it", "pl", "pt-pt", "sl", "es"]
LOCALE = Path(i18n.__file__).with_name("locale")
PACKAGE = Path(i18n.__file__).parent.parent  # the whole calendar_service package
# one known description in each language, written here by hand so a broken catalog cannot pass
EVENT_TITLE = {
    "en": "The event title", "nl": "De titel van het evenement", "fr": "Le titre de l'évènement",
    "de": "Der Titel der Veranstaltung", "it": "Il titolo dell'evento", "pl": "Tytuł wydarzenia",
    "pt-pt": "O título do evento", "sl": "Naslov dogodka", "es": "El título del evento",
}
LIST_EVENTS = {
    "en": "List events", "nl": "Evenementen weergeven", "fr": "Lister les évènements",
    "de": "Veranstaltungen auflisten", "it": "Elenca gli eventi", "pl": "Wyświetl wydarzenia",
    "pt-pt": "Listar eventos", "sl": "Seznam dogodkov", "es": "Listar los eventos",
}


@pytest.fixture
def client(app):
    return app.test_client()


def get_json(client, url: str, status: int = 200) -> dict:
    r = client.get(url)
    assert r.status_code == status, (url, r.get_json())
    return r.get_json()


def _doc_path(pattern: str) -> str:
    """The index key of a route (a WordPress regex) as an OpenAPI path, written independently of docs.py."""
    return re.sub(r"\(\?P<(\w+)>.*?\)(?=/|$)", r"{\1}", pattern) or "/"


def _operation_args(operation: dict, doc: dict) -> dict:
    """name -> required of an operation's parameters and request body fields."""
    out = {p["name"]: p["required"] for p in operation.get("parameters", [])}
    body = operation.get("requestBody")
    if body:
        ref = body["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
        schema = doc["components"]["schemas"][ref]
        assert body["content"]["application/x-www-form-urlencoded"]["schema"]["$ref"].endswith("/" + ref)
        out.update({name: name in schema.get("required", []) for name in schema["properties"]})
    return out


# ----------------------------------------------------------------------------- /doc is valid and complete


@pytest.mark.parametrize("language", ["en", "it", "pt-pt"])
def test_doc_is_a_valid_openapi_document(client, language):
    doc = get_json(client, f"{API}/doc?i18n_language={language}")
    validate(doc)  # raises OpenAPIValidationError with the first problem
    assert list(doc) == ["openapi", "info", "components", "servers", "paths", "tags"]
    assert doc["openapi"] == "3.0.0"


def test_every_route_of_the_table_is_in_doc_and_index(client):
    doc = get_json(client, f"{API}/doc")
    index = get_json(client, API)
    assert len(ROUTES) >= 15
    for route in ROUTES:
        key = f"/calendar/events/v1{route.pattern}"
        assert key in index["routes"], key
        assert index["routes"][key]["methods"] == route.methods, key
        path = _doc_path(route.pattern)
        assert path in doc["paths"], path
        assert sorted(doc["paths"][path]) == sorted(m.lower() for m in route.methods), path
        for endpoint in route.endpoints:
            expected = [a.name for a in endpoint.args] + [a.name for a in COMMON_ARGS]
            listed = [e for e in index["routes"][key]["endpoints"] if e["methods"] == list(endpoint.methods)]
            assert len(listed) == 1 and list(listed[0]["args"]) == expected, (key, endpoint.methods)
            for method in endpoint.methods:
                operation = doc["paths"][path][method.lower()]
                assert set(_operation_args(operation, doc)) == set(expected), (path, method)
                assert operation["summary"], (path, method)


def test_index_and_doc_agree(client):
    # compared from the two HTTP answers only: same routes, methods, arguments and required flags
    doc = get_json(client, f"{API}/doc?i18n_language=de")
    index = get_json(client, f"{API}?i18n_language=de")
    prefix = "/calendar/events/v1"
    from_index = {}
    for key, route in index["routes"].items():
        for endpoint in route["endpoints"]:
            for method in endpoint["methods"]:
                args = {name: (True if "{" + name + "}" in _doc_path(key[len(prefix):]) else schema["required"])
                        for name, schema in (endpoint["args"] or {}).items()}
                from_index[(_doc_path(key[len(prefix):]), method.lower())] = args
    from_doc = {(path, method): _operation_args(op, doc)
                for path, operations in doc["paths"].items() for method, op in operations.items()}
    assert from_index == from_doc
    # and the same descriptions, in the same language
    event_post = index["routes"][f"{prefix}/events"]["endpoints"][1]["args"]
    body = doc["components"]["schemas"]["events_create_body"]["properties"]
    for name, schema in event_post.items():
        if name in body:
            assert body[name]["description"] == schema["description"], name


def test_put_and_patch_share_the_update_operation_and_paths_have_unique_operation_ids(client):
    doc = get_json(client, f"{API}/doc")
    ops = doc["paths"]["/events/{id}"]
    assert ops["put"]["requestBody"] == ops["post"]["requestBody"] == ops["patch"]["requestBody"]
    ids = [op["operationId"] for operations in doc["paths"].values() for op in operations.values()]
    assert len(ids) == len(set(ids))


# ----------------------------------------------------------------------------- truthful schemas


def _param(doc, path, method, name) -> dict:
    return next(p for p in doc["paths"][path][method]["parameters"] if p["name"] == name)


def test_parameter_schemas_say_what_the_checks_accept(client):
    doc = get_json(client, f"{API}/doc")
    categories = _param(doc, "/events", "get", "categories")
    assert categories["schema"]["type"] == "array" and (categories["style"], categories["explode"]) == ("form", False)
    assert _param(doc, "/events", "get", "per_page")["schema"] == \
        {"type": "integer", "minimum": 1, "maximum": 999999999}
    assert _param(doc, "/categories", "get", "order")["schema"] == {"type": "string", "enum": ["asc", "desc"]}
    assert _param(doc, "/events", "get", "geoloc_lat")["schema"]["maximum"] == 90
    assert _param(doc, "/events", "get", "status")["schema"]["type"] == "array"
    path_id = _param(doc, "/venues/{id}", "get", "id")
    assert path_id["in"] == "path" and path_id["required"] is True and path_id["schema"]["type"] == "integer"
    assert _param(doc, "/events/{id}", "get", "password")["in"] == "query"
    body = doc["components"]["schemas"]["events_create_body"]
    assert body["required"] == ["title", "start_date", "end_date"]
    assert body["properties"]["status"]["enum"] == ["publish", "future", "draft", "pending", "private"]
    assert "required" not in doc["components"]["schemas"]["events_id_update_body"]
    form = doc["paths"]["/events"]["post"]["requestBody"]["content"]["application/x-www-form-urlencoded"]
    assert form["encoding"]["categories"] == {"style": "form", "explode": False}


def test_every_operation_documents_the_language_and_the_error_envelope(client):
    doc = get_json(client, f"{API}/doc")
    for path, operations in doc["paths"].items():
        for method, operation in operations.items():
            language = _param(doc, path, method, "i18n_language")
            assert language["in"] == "query" and language["required"] is False, (path, method)
            assert language["schema"] == {"type": "string"}  # unknown values fall back, they are no error
            error = operation["responses"]["4XX"]["content"]["application/json"]["schema"]
            assert error == {"$ref": "#/components/schemas/Error"}, (path, method)
    assert doc["paths"]["/events"]["post"]["responses"]["201"]["content"]["application/json"]["schema"] == \
        {"$ref": "#/components/schemas/Event"}
    assert doc["paths"]["/tags"]["get"]["responses"]["200"]["content"]["application/json"]["schema"] == \
        {"$ref": "#/components/schemas/TagList"}


def test_real_responses_match_their_documented_schemas(client, factory, admin):
    # the response schemas are what a fuzzer checks answers against: real answers must fit them
    import jsonschema
    doc = get_json(client, f"{API}/doc")
    venue = factory.venue(city="Ghent")
    event = factory.event(venue=venue["id"], categories="Jazz", tags="free", organizer={"organizer": "Org"})
    checks = [("/events", "get", f"{API}/events"), ("/events/{id}", "get", f"{API}/events/{event['id']}"),
              ("/venues", "get", f"{API}/venues"), ("/organizers", "get", f"{API}/organizers"),
              ("/categories", "get", f"{API}/categories"),
              ("/tags/{id}", "get", f"{API}/tags/{event['tags'][0]['id']}"),
              ("/", "get", API), ("/events/{id}", "get", f"{API}/events/999999")]
    answers = [(path, method, client.get(url)) for path, method, url in checks]
    answers.append(("/events", "post", client.post(f"{API}/events", json={"title": "x", "start_date": None})))
    answers.append(("/events", "post", admin.post("/events", json={
        "title": "Gig", "start_date": "tomorrow 8pm", "end_date": "tomorrow 9pm", "venue": {"venue": "Hall"},
        "cost": ["5", 10], "image": "https://example.test/a.png"})))
    answers.append(("/venues/{id}", "delete", admin.delete(f"/venues/{venue['id']}")))
    answers.append(("/tags/{id}", "patch", admin.patch(f"/tags/{event['tags'][0]['id']}", json={"name": "Free!"})))
    assert [r.status_code for _p, _m, r in answers[-4:]] == [400, 201, 200, 200]
    for path, method, r in answers:
        response = doc["paths"][path][method]["responses"]
        spec = response.get(str(r.status_code)) or response["4XX"]
        schema = {**spec["content"]["application/json"]["schema"], "components": doc["components"]}
        assert "$ref" in schema, (path, r.status_code)
        jsonschema.validate(r.get_json(), schema)


def test_a_new_route_gets_a_generic_entry_and_may_name_its_response_schema():
    def handle_things(call):  # a handler /doc has no summary or success schema for
        return {}, 200

    urls = Urls("http://x.test/calendar/events/v1", "http://x.test")
    since = Arg("since", "A commit", type="string", check=NONEMPTY)
    plain = Route("/changes", (Endpoint(("GET",), handle_changes, (since,)),))
    named = Route("/things", (Endpoint(("GET",), handle_things, (), response="Event"),))
    bodies: dict = {}
    op = docs._operation(plain, plain.endpoints[0], "GET", bodies, "en")
    assert [p["name"] for p in op["parameters"]] == ["since", "i18n_language"]
    assert op["parameters"][0]["schema"] == {"type": "string", "minLength": 1}
    assert op["responses"]["200"] == {"description": "Success"}  # no body shape promised
    assert op["summary"] == "GET /changes"
    assert op["responses"]["4XX"]["content"]["application/json"]["schema"]["$ref"].endswith("/Error")
    op = docs._operation(named, named.endpoints[0], "GET", bodies, "it")
    assert op["responses"]["200"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Event"}
    assert op["responses"]["200"]["description"] == i18n.gettext("Success", "it") != "Success"
    assert docs.openapi(ROUTES, urls, "it") is docs.openapi(ROUTES, urls, "it")  # built once per base URL and language


# ----------------------------------------------------------------------------- languages over HTTP


def _event_title(doc: dict) -> str:
    return doc["components"]["schemas"]["events_create_body"]["properties"]["title"]["description"]


@pytest.mark.parametrize("language", LANGUAGES)
def test_language_by_parameter(client, language):
    doc = get_json(client, f"{API}/doc?i18n_language={language}")
    assert _event_title(doc) == EVENT_TITLE[language]
    assert doc["paths"]["/events"]["get"]["summary"] == LIST_EVENTS[language]
    assert doc["info"]["description"] == i18n.gettext(docs.INFO_DESCRIPTION, language)
    assert doc["servers"] == [{"url": f"http://localhost{API}/"}]
    index = get_json(client, f"{API}?i18n_language={language}")
    assert index["routes"][f"{API}/events"]["endpoints"][1]["args"]["title"]["description"] == EVENT_TITLE[language]


@pytest.mark.parametrize("language", LANGUAGES)
def test_language_by_path_segment(client, language):
    base = f"/{language}{API}"
    doc = get_json(client, f"{base}/doc")
    assert _event_title(doc) == EVENT_TITLE[language]
    assert doc["info"]["description"] == i18n.gettext(docs.INFO_DESCRIPTION, language)
    assert doc["servers"] == [{"url": f"http://localhost{base}/"}]  # links keep the segment
    index = get_json(client, base)
    assert index["routes"][f"{API}/events"]["endpoints"][1]["args"]["title"]["description"] == EVENT_TITLE[language]
    assert index["routes"][f"{API}/events"]["_links"]["self"] == [{"href": f"http://localhost{base}/events"}]
    assert index["_links"]["up"] == [{"href": f"http://localhost/{language}/"}]


def test_languages_are_different_and_english_is_the_source():
    assert len(set(EVENT_TITLE.values())) == 9
    assert docs.openapi(ROUTES, Urls("http://x/calendar/events/v1", "http://x"))["info"]["description"] == docs.INFO_DESCRIPTION


def test_data_is_the_same_in_every_language_and_list_links_keep_the_segment(client, factory):
    factory.event(title="Concert")
    plain = get_json(client, f"{API}/events")
    italian = get_json(client, f"/it{API}/events?i18n_language=it")
    assert italian["rest_url"].startswith(f"http://localhost/it{API}/events/")
    strip = lambda body: {k: v for k, v in body.items() if k != "rest_url"}  # noqa: E731
    assert [strip(e) for e in italian["events"]] == [strip(e) for e in plain["events"]]
    assert italian["events"][0]["title"] == "Concert"
    assert italian["events"][0]["rest_url"].startswith(f"http://localhost/it{API}/events/")


def test_unknown_languages_fall_back_to_english_and_unknown_segments_are_404(client):
    assert _event_title(get_json(client, f"{API}/doc?i18n_language=xx")) == "The event title"
    assert _event_title(get_json(client, f"{API}/doc?i18n_language[]=it")) == "The event title"
    # a known parameter wins over the segment; an unknown one leaves the segment's language
    assert _event_title(get_json(client, f"/it{API}/doc?i18n_language=de")) == EVENT_TITLE["de"]
    assert _event_title(get_json(client, f"/it{API}/doc?i18n_language=xx")) == EVENT_TITLE["it"]
    assert _event_title(get_json(client, f"{API}/doc?i18n_language=PT_pt")) == EVENT_TITLE["pt-pt"]
    for url in (f"/xx{API}", f"/xx{API}/events", f"/pt_pt{API}/doc", f"/it/it{API}/doc", "/it/calendar"):
        assert get_json(client, url, 404)["code"] == "rest_no_route", url
    # the segment works with the case-insensitive namespace and on writes' error answers too
    assert _event_title(get_json(client, "/IT/Calendar/Events/V1/doc")) == EVENT_TITLE["it"]
    r = client.post(f"/it{API}/events", json={})
    assert r.status_code == 400 and r.get_json()["code"] == "rest_missing_callback_param"


# ----------------------------------------------------------------------------- catalogs


def _pot_ids() -> set[str]:
    with (LOCALE / "messages.pot").open("rb") as handle:
        return {m.id for m in read_po(handle) if m.id}


def test_pot_is_extracted_from_the_code():
    # what `pybabel extract -F babel.cfg -k N_` finds today must be what messages.pot holds
    found = {message for _file, _line, message, _comments, _context in
             extract_from_dir(str(PACKAGE), method_map=[("**.py", "python")], keywords={"N_": None})}
    assert found == _pot_ids()


def test_every_described_string_is_in_the_catalog_template():
    pot = _pot_ids()
    doc = docs.openapi(ROUTES, Urls("http://x/calendar/events/v1", "http://x"))
    texts = set()
    for route in ROUTES:
        for endpoint in route.endpoints:
            texts.update(a.description for a in docs.endpoint_args(endpoint) if a.description)
    for operations in doc["paths"].values():
        for op in operations.values():
            texts.add(op["summary"])
            texts.update(r["description"] for r in op["responses"].values())
    texts.add(doc["info"]["description"])
    texts.update(docs.schema_descriptions())   # the response fields described (recurring events)
    assert {"recurrence", "post_parent"} <= set(doc["components"]["schemas"]["Event"]["properties"])
    assert len(docs.schema_descriptions()) >= 5
    assert texts - pot == set()


# the descriptions of the recurring-event arguments, fields and route, by where /doc holds them
RECURRING = {
    "recurrence argument": lambda doc: _body(doc, "/events/{id}", "put")["recurrence"]["description"],
    "recurrence_scope argument": lambda doc: next(p["description"] for p in doc["paths"]["/events/{id}"]["delete"][
        "parameters"] if p["name"] == "recurrence_scope"),
    "occurrences route": lambda doc: doc["paths"]["/events/{id}/occurrences"]["get"]["summary"],
    "post_parent field": lambda doc: doc["components"]["schemas"]["Event"]["properties"]["post_parent"]["description"],
    "recurrence field": lambda doc: doc["components"]["schemas"]["Event"]["properties"]["recurrence"]["description"],
    **{f"recurrence.{k} field": (lambda k: lambda doc: doc["components"]["schemas"]["Event"]["properties"][
        "recurrence"]["properties"][k]["description"])(k) for k in ("rules", "exceptions", "occurrences")},
}


def _body(doc: dict, path: str, method: str) -> dict:
    ref = doc["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    return doc["components"]["schemas"][ref.rsplit("/", 1)[-1]]["properties"]


@pytest.mark.parametrize("language", [lang for lang in LANGUAGES if lang != "en"])
def test_the_recurring_event_texts_are_translated_in_every_language(client, language):
    english = get_json(client, f"{API}/doc")
    doc = get_json(client, f"{API}/doc?i18n_language={language}")
    for what, find in RECURRING.items():
        source, text = find(english), find(doc)
        assert source and text and text != source, (language, what)
        assert text == i18n.gettext(source, language), (language, what)
    # the exception keys' forms and the code words stay as they are
    assert "YYYY-MM-DD HH:MM:SS" in RECURRING["recurrence.exceptions field"](doc)
    assert "post_parent" in RECURRING["post_parent field"](doc)


@pytest.mark.parametrize("folder", [f for f in i18n.LANGUAGES.values() if f])
def test_catalog_is_complete_and_keeps_code_words(folder):
    with (LOCALE / folder / "LC_MESSAGES" / "messages.po").open("rb") as handle:
        catalog = read_po(handle)
    messages = {m.id: m for m in catalog if m.id}
    assert set(messages) == _pot_ids()
    for msgid, message in messages.items():
        assert message.string and message.string.strip(), (folder, msgid)
        assert not message.fuzzy, (folder, msgid)
        assert message.string != msgid, (folder, msgid)  # nothing left in English
        for word in re.findall(r"\b[a-z]+_[a-z_*]+\b|geoloc_\w+|\bCSV\b|\bOpenAPI\b|\bgit\b", msgid):
            assert word.lower() in message.string.lower(), (folder, msgid, word)  # code words are kept
