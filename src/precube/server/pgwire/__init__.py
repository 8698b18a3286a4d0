"""The PostgreSQL wire protocol front end of `precube serve --pg-port`: psql, psycopg and JDBC clients sign in
as the server's users and query a project (the database) through the same sessions, result cache, history
and permission check as the REST API."""
