#!/usr/bin/env bash
# Installs Footfall head office as a systemd service on a Linux server (Debian 12 / Ubuntu 22.04 or later).
#
#   sudo packaging/install-server.sh [--app-dir DIR] [--no-start]
#
# DIR is the built application (a checkout after `npm ci && npm run build`, or an unpacked release); default: the
# folder this script belongs to. The script
#   - creates the system user `footfall` (no login, no home),
#   - creates /etc/footfall (0750, root:footfall) and, only if it is not there yet, /etc/footfall/server.env
#     (0600, root:root): every FOOTFALL_* setting, commented out, with its default,
#   - puts a `footfall` command in /usr/local/bin,
#   - installs and enables /etc/systemd/system/footfall-server.service (its data folder, /var/lib/footfall-server,
#     is made by systemd on the first start),
#   - starts it, waits until it answers on /healthz and says where to sign in and how to get the first password.
# --no-start: everything but starting; to choose the first admin (FOOTFALL_ADMIN_EMAIL, FOOTFALL_ADMIN_PASSWORD in
# server.env) before the first start, install with --no-start, edit, then `sudo systemctl start footfall-server`.
# Running it again upgrades in place: server.env and the data are kept, the service is restarted.
#
# --root DIR is for the tests only (test/install-scripts.test.ts): it stages the files under DIR and leaves out
# every step that would change the machine (see packaging/lib.sh).
set -euo pipefail

ff_name=install-server
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ff_parse_args "$@"

user=$ff_user
config_dir=/etc/footfall
env_file=$config_dir/server.env
data_dir=/var/lib/footfall-server
health_timeout_s=90

ff_check_root
ff_check_systemd "see docs/operations.md to run head office another way"
ff_check_node_and_app

ff_ensure_user "$data_dir" "Footfall head office"

# /etc/footfall is shared with the agent when both run on one machine: the agent's installer gives it to footfall
# (it writes agent.json there). Found already there, it is left as it is.
if [ -d "$ff_root$config_dir" ]; then
  echo "Kept $config_dir"
else
  ff_install_dir 0750 root "$user" "$config_dir"
fi
if [ -f "$ff_root$env_file" ]; then
  echo "Kept $env_file (settings are never overwritten; new settings: $ff_here/server.env)"
else
  install -m 0600 "$ff_here/server.env" "$ff_root$env_file"
  echo "Created $env_file (every setting commented out, with its default)"
fi
ff_secure_file 0600 root root "$env_file"

ff_install_command

# The last uncommented KEY=VALUE of server.env, without quotes; empty when unset.
setting() {
  sed -n "s/^[[:space:]]*$1[[:space:]]*=[[:space:]]*//p" "$ff_root$env_file" | tail -n 1 \
    | sed -e 's/[[:space:]]*$//' -e 's/^"\(.*\)"$/\1/' -e "s/^'\(.*\)'$/\1/"
}
port="$(setting FOOTFALL_HTTP_PORT)"; port="${port:-8080}"
host="$(setting FOOTFALL_HTTP_HOST)"
case "$host" in
  ''|0.0.0.0|::|'[::]') probe_host=127.0.0.1; console_host="$(hostname -f 2>/dev/null || uname -n)" ;;
  *:*) probe_host="[${host#[}"; probe_host="${probe_host%]}]"; console_host="$probe_host" ;;
  *) probe_host="$host"; console_host="$host" ;;
esac
first_start=yes
[ -e "$ff_root$data_dir/footfall.db" ] && first_start=no

ff_install_unit footfall-server

if [ "$ff_start" = no ]; then
  if [ "$first_start" = yes ]; then
    echo "Not started (--no-start). Settings: $env_file; then: sudo systemctl start footfall-server"
  else
    echo "Not restarted (--no-start): head office runs the new version after: sudo systemctl restart footfall-server"
  fi
  exit 0
fi

ff_systemctl restart footfall-server.service
health="http://$probe_host:$port/healthz"
if ff_staged; then
  ff_skip "waiting for $health"
elif ! ff_wait_http "$health" "$health_timeout_s"; then
  ff_die "head office did not answer on $health within $health_timeout_s s: see systemctl status footfall-server and journalctl -u footfall-server"
fi

echo
ff_staged && echo "(--root: the rest is what a real installation says now)"
echo "Head office is running ($health answers). Logs: journalctl -u footfall-server -f"
mqtt_port="$(setting FOOTFALL_MQTT_PORT)"
echo "Web console: http://$console_host:$port/ (shop PCs need this port and the MQTT port, ${mqtt_port:-1883})"
if [ "$first_start" = yes ]; then
  admin_email="$(setting FOOTFALL_ADMIN_EMAIL)"
  if [ -n "$(setting FOOTFALL_ADMIN_PASSWORD)" ]; then
    echo "Sign in as ${admin_email:-admin@footfall.local} with the FOOTFALL_ADMIN_PASSWORD of $env_file,"
    echo "then take the password out of that file (it is only read while there is no admin)."
  else
    echo "Sign in as ${admin_email:-admin@footfall.local}; its password was printed once in the log:"
    echo "  sudo journalctl -u footfall-server -o cat | grep -A1 'Platform admin created'"
  fi
  echo "Back up $data_dir/encryption.key with the database: docs/operations.md, \"Backup and restore\"."
else
  echo "Upgraded: settings and data kept."
fi
