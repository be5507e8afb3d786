"""gunicorn settings of one calendar replica: `gunicorn -c deploy/cluster/gunicorn.conf.py`.

CALENDAR_BIND (default 127.0.0.1:5000) and CALENDAR_WORKERS (default 4) come from the
environment, with every CALENDAR_ setting of the service (calendar.env).
"""
import os

wsgi_app = "calendar_service:create_app()"
bind = os.environ.get("CALENDAR_BIND", "127.0.0.1:5000")
workers = int(os.environ.get("CALENDAR_WORKERS", "4"))
# a write may wait for the git host: CALENDAR_REMOTE_TIMEOUT per git command plus its retries
timeout = 60
graceful_timeout = 20
# each worker builds its own service (pull and follower threads, git processes): never --preload;
# the master only loads the modules and the records, which the workers share (on_starting)
preload_app = False
from calendar_service.http.serving import on_starting  # noqa: E402,F401
# X-Forwarded-Proto/For are believed only from the balancer
forwarded_allow_ips = os.environ.get("CALENDAR_BALANCER_IPS", "127.0.0.1,::1")
# gunicorn's control socket sits in the home folder, shared by every replica of a user: not used
control_socket_disable = True
accesslog = os.environ.get("CALENDAR_ACCESS_LOG") or None
