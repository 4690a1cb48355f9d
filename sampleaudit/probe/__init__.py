"""The daily probe: fixed prompts answered every morning, a day's figures kept in an SQLite history,
and a trend rule that says when to roll back (see trend.py for the rule, history.py for the store)."""
