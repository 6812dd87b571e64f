"""Protocol versions: what each ACP version names and expects (``v2``: the v2 draft)."""
