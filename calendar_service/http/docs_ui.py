"""Interactive documentation: Swagger UI, served from the ``swagger-ui-bundle`` package, reading /doc.

``GET /calendar/events/v1/doc/ui`` is an HTML page (not a REST route, so it is not in the
route table) whose scripts and styles come from this server, never from a CDN: the page
works offline and sends nothing to third parties (Swagger UI's online validator is off).
With a language (path segment or ``i18n_language``) the page reads /doc in that language.
"""
from __future__ import annotations

from html import escape
from pathlib import Path
from urllib.parse import urlencode

from flask import Blueprint, Response, request, send_from_directory
from swagger_ui_bundle import swagger_ui_path
from werkzeug.exceptions import NotFound

from calendar_service.http import i18n, prefix as api
from calendar_service.http.namespace import NAMESPACE

ui = Blueprint("calendar_doc_ui", __name__)
PAGE = f"/{NAMESPACE}/doc/ui"
ASSETS = {"swagger-ui.css", "swagger-ui-bundle.js", "favicon-32x32.png", "favicon-16x16.png"}
INIT_JS = """window.addEventListener("load", function () {
  var root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: root.getAttribute("data-url"),
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout"
  });
});
"""
# Swagger UI sets inline styles; everything else comes from this server.
CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'self'")


@ui.get(PAGE)
def page():
    """The HTML page; its scripts load Swagger UI and point it at /doc (same language, same prefix)."""
    segment = request.environ.get(i18n.ENVIRON_KEY)
    prefix = api.api_prefix()  # the prefix the page was asked under (a language, the compat prefix)
    language = i18n.choose(request.args.get("i18n_language"), segment)
    query = f"?{urlencode({'i18n_language': language})}" if i18n.normalize(request.args.get("i18n_language")) else ""
    assets = prefix + "/doc/ui"
    body = f"""<!DOCTYPE html>
<html lang="{escape(language)}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>The Events Calendar REST API</title>
<link rel="stylesheet" href="{escape(assets)}/swagger-ui.css">
<link rel="icon" type="image/png" href="{escape(assets)}/favicon-32x32.png" sizes="32x32">
</head>
<body>
<div id="swagger-ui" data-url="{escape(prefix + '/doc' + query)}"></div>
<script src="{escape(assets)}/swagger-ui-bundle.js"></script>
<script src="{escape(assets)}/init.js"></script>
</body>
</html>
"""
    return Response(body, headers={"Content-Type": "text/html; charset=utf-8", "Content-Security-Policy": CSP,
                                   "X-Content-Type-Options": "nosniff"})


@ui.get(PAGE + "/init.js")
def init_script():
    """The script that starts Swagger UI (a file rather than inline, so the page's CSP forbids inline scripts)."""
    return Response(INIT_JS, headers={"Content-Type": "text/javascript; charset=utf-8",
                                      "X-Content-Type-Options": "nosniff"})


@ui.get(PAGE + "/<name>")
def asset(name: str):
    """One of Swagger UI's files from the installed package; anything else is a 404."""
    if name not in ASSETS:
        raise NotFound()
    response = send_from_directory(Path(swagger_ui_path), name, max_age=86400)
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response
