"""The one door to queries (issue 37): every front end — REST, the Postgres wire, the DB-API, a future Arrow
Flight SQL — runs statements, explains them, lists the catalog and cancels through this package, which sits
between them and `{query, cache, auth}`."""
