-- The state database of the replicas (run as a PostgreSQL superuser: psql -f postgres.sql).
-- The service creates its tables on first use; the role owns only this database.
CREATE ROLE calendar LOGIN PASSWORD 'DB-PASSWORD';
CREATE DATABASE calendar OWNER calendar TEMPLATE template0 ENCODING 'UTF8';
