"""Sources: registering tables from files or a Spark catalog, reading them, and sampling them."""
