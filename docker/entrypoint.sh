#!/bin/sh
# The container's entrypoint (Dockerfile). `gateway`, the default command, serves the assistant
# directory ($SERVICE_DIR, the volume /assistant) on every interface of the container at
# $SERVICE_PORT, first making an assistant there with `service init --yes` when the volume holds
# none ($SERVICE_ENGINE, $SERVICE_TEMPLATE and $SERVICE_NAME choose it). Any other command is a
# `service` command, run in that directory: `docker run ... agent-service store backup /assistant/backup.db`.
set -eu
dir="${SERVICE_DIR:-/assistant}"
cli="${SERVICE_CLI:-agent-service}"

if [ "${1:-gateway}" != "gateway" ]; then
  cd "$dir"
  exec "$cli" "$@"
fi
[ "$#" -gt 0 ] && shift

if [ ! -d "$dir" ] || [ ! -w "$dir" ]; then
  echo "error: $dir is not a directory this container's user (uid $(id -u)) can write" >&2
  echo "hint: mount a volume there (-v assistant:$dir), or give a bind-mounted folder to uid $(id -u): chown -R $(id -u):$(id -g) <folder>" >&2
  exit 1
fi
if [ ! -f "$dir/service.yaml" ]; then
  echo "no service.yaml in $dir: making an assistant there (service init --yes)" >&2
  "$cli" init "$dir" --yes ${SERVICE_ENGINE:+--engine "$SERVICE_ENGINE"} ${SERVICE_TEMPLATE:+--template "$SERVICE_TEMPLATE"} ${SERVICE_NAME:+--name "$SERVICE_NAME"}
fi
cd "$dir"
# Every interface of the container: the port is published (or not) by docker run -p / compose.
exec "$cli" gateway -d "$dir" --host "${SERVICE_HOST:-0.0.0.0}" "$@"
