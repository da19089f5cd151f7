#!/usr/bin/env bash
# The environment every Mill command and test uses against the local services.
# Source it (`. localstack/env.sh`) to export it, or run it to print it
# (`eval "$(localstack/env.sh)"`). Values already set in the environment win,
# so a developer can point MILL_DATABASE_URL at a server of their own.
#
# Both paths of localstack/up.sh (LocalStack in Docker, or moto server and a
# PostgreSQL cluster the scripts own) listen on these same addresses.
: "${AWS_ENDPOINT_URL:=http://127.0.0.1:4566}"
: "${AWS_ACCESS_KEY_ID:=test}"
: "${AWS_SECRET_ACCESS_KEY:=test}"
: "${AWS_REGION:=us-east-1}"
: "${MILL_PG_PORT:=15432}"
: "${MILL_DATABASE_URL:=postgres://postgres:mill@127.0.0.1:${MILL_PG_PORT}/mill?sslmode=disable}"
export AWS_ENDPOINT_URL AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_REGION MILL_DATABASE_URL MILL_PG_PORT
# The emulators of the stores outside AWS (localstack/clouds.sh).
: "${MILL_GCS_EMULATOR_URL:=http://127.0.0.1:4443}"
: "${MILL_AZURITE_BLOB_URL:=http://127.0.0.1:10000/devstoreaccount1}"
export MILL_GCS_EMULATOR_URL MILL_AZURITE_BLOB_URL
# DuraCloud's MySQL mill database, MariaDB (localstack/mariadb.sh): a Go
# MySQL DSN, the value of --duracloud-db.
: "${MILL_MYSQL_PORT:=13306}"
: "${MILL_MYSQL_URL:=mill:mill@tcp(127.0.0.1:${MILL_MYSQL_PORT})/duracloud_mill}"
export MILL_MYSQL_PORT MILL_MYSQL_URL
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  for v in AWS_ENDPOINT_URL AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_REGION MILL_DATABASE_URL MILL_GCS_EMULATOR_URL MILL_AZURITE_BLOB_URL MILL_MYSQL_URL; do
    printf 'export %s=%q\n' "$v" "${!v}"
  done
fi
