#!/bin/sh
# Creates the service's least-privileged PostgreSQL role in the service's database: a login role
# that is no superuser and can create no database and no role, owns one schema of its own (named
# after it, first on its search_path) and has no privilege anywhere else. The service creates
# and migrates its tables in that schema at start and creates and drops read-model tables at run
# time (one per collection, a new set per `collab projections rebuild`), so it needs to own the
# schema, not only to use it: a migration role apart from the runtime role would not be enough.
#
# Run it once, as a superuser (or the database's owner holding CREATEROLE), with psql on PATH:
#   COLLAB_DB_PASSWORD=... POSTGRES_DB=collab PGHOST=db.internal PGUSER=postgres sh scripts/postgres-role.sh
# The official postgres image runs it at its first start when it is mounted into
# /docker-entrypoint-initdb.d (docker-compose.postgres.yml): there POSTGRES_USER and POSTGRES_DB
# are set and psql reaches the server on its socket.
#
# COLLAB_DB_PASSWORD  required; goes into POSTGRES_URL as is, so hex (openssl rand -hex 24) or
#                     percent-encode it there
# COLLAB_DB_ROLE      the role and its schema (default collab)
# POSTGRES_DB         the database, created beforehand (default collab)
# POSTGRES_USER       who runs this (default: libpq's PGUSER, or the login name)
#
# Then: POSTGRES_URL=postgres://collab:<password>@<host>:5432/collab (README, Production).
#
# Split roles (docs/operations.md, Roles): also set
# COLLAB_DB_RUNTIME_ROLE      a second login role for the running service (e.g. collab_app)
# COLLAB_DB_RUNTIME_PASSWORD  its password
# The first role then owns the schema and the log and runs `collab migrate --runtime-role
# collab_app` at each upgrade; the runtime role may read and append to the log and nothing
# more (UPDATE, DELETE and TRUNCATE of `events` are refused by the database), and owns the
# read-model tables it creates.

# The image sources an init script that is not executable (a checkout that lost the mode): then
# this runs inside its entrypoint's shell, so it leaves the entrypoint's arguments and options
# as they were (no `set --`, no `set -u`) and its own variables are prefixed.
set -e
: "${COLLAB_DB_PASSWORD:?set COLLAB_DB_PASSWORD to the service role's password (openssl rand -hex 24)}"
collab_role="${COLLAB_DB_ROLE:-collab}"
collab_db="${POSTGRES_DB:-collab}"

# Variables are interpolated by psql (:"x" an identifier, :'x' a literal), never by the shell.
psql -v ON_ERROR_STOP=1 --no-psqlrc --quiet ${POSTGRES_USER:+"--username=$POSTGRES_USER"} --dbname "$collab_db" \
  -v role="$collab_role" -v password="$COLLAB_DB_PASSWORD" -v db="$collab_db" <<'SQL'
CREATE ROLE :"role" LOGIN PASSWORD :'password' NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
-- Only this role (and superusers) may connect to the database; nobody creates in `public`
-- (PostgreSQL 14 and older let every role do so).
REVOKE ALL ON DATABASE :"db" FROM PUBLIC;
GRANT CONNECT ON DATABASE :"db" TO :"role";
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
-- The service's schema, owned by its role: its tables go there (search_path) and nowhere else.
CREATE SCHEMA :"role" AUTHORIZATION :"role";
ALTER ROLE :"role" IN DATABASE :"db" SET search_path = :"role";
-- A transaction left open holds every follower of the log back (docs/operations.md, PostgreSQL,
-- Global order): the service never idles inside one, so a session that does is ended.
ALTER ROLE :"role" SET idle_in_transaction_session_timeout = '60s';
SQL

if [ -n "${COLLAB_DB_RUNTIME_ROLE:-}" ]; then
  : "${COLLAB_DB_RUNTIME_PASSWORD:?set COLLAB_DB_RUNTIME_PASSWORD with COLLAB_DB_RUNTIME_ROLE}"
  psql -v ON_ERROR_STOP=1 --no-psqlrc --quiet ${POSTGRES_USER:+"--username=$POSTGRES_USER"} --dbname "$collab_db" \
    -v role="$collab_role" -v runtime="$COLLAB_DB_RUNTIME_ROLE" -v password="$COLLAB_DB_RUNTIME_PASSWORD" -v db="$collab_db" <<'SQL'
CREATE ROLE :"runtime" LOGIN PASSWORD :'password' NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
GRANT CONNECT ON DATABASE :"db" TO :"runtime";
-- It creates its read-model tables in the owner's schema (and owns them); the log's tables
-- are the owner's, granted by `collab migrate --runtime-role`.
GRANT USAGE, CREATE ON SCHEMA :"role" TO :"runtime";
ALTER ROLE :"runtime" IN DATABASE :"db" SET search_path = :"role";
ALTER ROLE :"runtime" SET idle_in_transaction_session_timeout = '60s';
-- Marks it the runtime role: it never creates or migrates the log's tables (so they stay the
-- owner's), and says to run `collab migrate` as the owner when they are missing or behind.
ALTER ROLE :"runtime" SET collab.role = 'runtime';
SQL
fi
