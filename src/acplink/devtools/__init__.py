"""``acplink devtools``: a web inspector and browser client for ACP traffic.

:mod:`.store` (SQLite, versioned migrations, WAL), :mod:`.importer` (JSON-lines traces in),
:mod:`.server` (the Starlette app, its token and Origin guard, the live feed), the views
(:mod:`.views`, :mod:`.conversation`, :mod:`.waterfall`, :mod:`.compare`), :mod:`.connect`
(agents started from the UI) and ``static/`` (one stylesheet, one script; no build step).
Only :mod:`.server` imports the web stack, and only the CLI's ``devtools`` command imports it.
"""
