"""Start the calendar service: ``python app.py [--host H] [--port P]``.

Configuration comes from the environment (see README.md). For production, run
``gunicorn -w 4 'calendar_service:create_app()'`` instead.
"""
import argparse
import logging

from calendar_service import create_app


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve the calendar events REST API.")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=5000, help="port to listen on (default 5000)")
    parser.add_argument("--debug", action="store_true", help="Flask debug mode (never in production)")
    options = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    app = create_app()
    app.run(host=options.host, port=options.port, debug=options.debug, threaded=True)


if __name__ == "__main__":
    main()
