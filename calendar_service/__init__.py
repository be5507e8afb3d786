"""Calendar events REST service whose database is a git repository of plain files.

``create_app()`` (in ``calendar_service.http.app``) builds the Flask application; gunicorn
and ``app.py`` import it from here. The layers and where each concern lives are described
in docs/architecture.md.
"""
from calendar_service.http.app import create_app

__all__ = ["create_app"]
