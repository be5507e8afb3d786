"""The handlers: each takes the request's ``Call`` and answers ``(body, status)`` for JSON, or a
ready ``Response`` for another representation. The route table (``routes.py``) names each
endpoint's handler function.
"""
