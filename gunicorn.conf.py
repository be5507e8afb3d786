"""gunicorn's settings when it is started in this folder (gunicorn reads ./gunicorn.conf.py):
`gunicorn -w 4 'calendar_service:create_app()'`. Elsewhere, pass it: `gunicorn -c gunicorn.conf.py ...`.
A replica of a cluster uses deploy/cluster/gunicorn.conf.py, which does the same.
"""
# the master loads the app's modules and the records once; each worker then builds its own
# service from them, sharing their memory (calendar_service/http/serving.py)
from calendar_service.http.serving import on_starting  # noqa: F401
