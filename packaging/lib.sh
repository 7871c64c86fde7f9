# shellcheck shell=bash disable=SC2034  # (variables set here are read by the scripts that source it)
# What install-agent.sh and install-server.sh have in common, sourced by both (never run on its own), so that each
# rule exists once: the options, the checks (root, systemd, node, the built application), the service user, folders
# and file modes, the `footfall` command and the unit file. The caller sets ff_name (its name in messages) first.
#
# Test mode, for test/install-scripts.test.ts only: `--root DIR` installs into the staging folder DIR instead of /.
# Every file lands under DIR with its real mode; nothing outside DIR is touched: no user is created, no owner is
# changed, no package is installed, systemctl is not called, nothing is fetched or waited for. Each step left out
# is printed as "<name>: --root: skipped: <step>". The systemd check is left out too; the root check is not, but
# with --root the environment variable FOOTFALL_INSTALL_TEST_UID, when set, stands for `id -u` (0 passes), so tests
# run as any user and can check the refusal. Without --root that variable is ignored.

ff_name="${ff_name:-install}"
ff_here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ff_app_dir="$(cd "$ff_here/.." && pwd)"
ff_start=yes
ff_root=
ff_user=footfall
ff_node=
ff_main=

ff_die() { echo "$ff_name: $*" >&2; exit 1; }
ff_staged() { [ -n "$ff_root" ]; }
ff_skip() { echo "$ff_name: --root: skipped: $*"; }

# The comment block at the top of the running script, without its first line (#!).
ff_help() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

ff_parse_args() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --app-dir)
        [ $# -ge 2 ] || ff_die "--app-dir needs a folder"
        ff_app_dir="$(cd "$2" 2>/dev/null && pwd)" || ff_die "--app-dir $2: no such folder"
        shift 2 ;;
      --no-start) ff_start=no; shift ;;
      --root)
        [ $# -ge 2 ] || ff_die "--root needs a folder"
        mkdir -p "$2" || ff_die "--root $2: cannot create it"
        ff_root="$(cd "$2" && pwd)"
        [ "$ff_root" != / ] || ff_die "--root / is not a staging folder: leave --root out for a real installation"
        shift 2 ;;
      -h|--help) ff_help; exit 0 ;;
      *) echo "$ff_name: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
  done
}

ff_check_root() {
  local uid
  uid="$(id -u)"
  if ff_staged && [ -n "${FOOTFALL_INSTALL_TEST_UID:-}" ]; then uid="$FOOTFALL_INSTALL_TEST_UID"; fi
  [ "$uid" = 0 ] || ff_die "run it as root (sudo $0)"
}

# $1: where to look when there is no systemd.
ff_check_systemd() {
  if ff_staged; then ff_skip "the systemd check"; return; fi
  command -v systemctl >/dev/null || ff_die "systemd is needed; $1"
}

# Sets ff_node (node's real path, Node.js 20.19 or later) and ff_main (the built application's entry point).
ff_check_node_and_app() {
  ff_node="$(command -v node || true)"
  [ -n "$ff_node" ] || ff_die "node is not installed: install Node.js 20.19 or later first"
  ff_node="$(readlink -f "$ff_node")"
  "$ff_node" -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a===20&&b>=19)?0:1)' \
    || ff_die "node $("$ff_node" --version) is too old: Node.js 20.19 or later is needed"
  # Both paths go into the unit file (where spaces split words and % $ " ' \ mean something), into sed replacements
  # (# &) and into the shell wrapper: only plain path characters are let through.
  case "$ff_app_dir$ff_node" in
    *[!A-Za-z0-9._/+,:=@~-]*)
      ff_die "paths with spaces or characters other than letters, digits and . _ - + , : = @ ~ / are not supported in the unit file: move the application (now $ff_app_dir, node $ff_node)" ;;
  esac
  local p
  for p in "$ff_app_dir" "$ff_node"; do
    case "$p" in
      /home/*|/root/*|/run/user/*)
        echo "$ff_name: warning: $p is in a home folder, which the service cannot see (ProtectHome=yes): it will not" >&2
        echo "         start. Put the application under /opt and install Node.js system-wide." >&2 ;;
    esac
  done
  ff_main="$ff_app_dir/dist/cli/main.js"
  [ -f "$ff_main" ] || ff_die "$ff_main is missing: build the application first (cd $ff_app_dir && npm ci && npm run build)"
}

# $1: the user's home (not created), $2: its description. The agent and head office share the one user.
ff_ensure_user() {
  if ff_staged; then ff_skip "creating the system user $ff_user if missing"; return; fi
  if ! id -u "$ff_user" >/dev/null 2>&1; then
    echo "Creating system user $ff_user"
    useradd --system --user-group --home-dir "$1" --no-create-home --shell /usr/sbin/nologin --comment "$2" "$ff_user"
  fi
}

# ff_home_of USER: the user's home folder from the user database.
ff_home_of() { getent passwd "$1" | cut -d: -f6; }

# ff_install_dir MODE OWNER GROUP DIR: creates DIR, or sets the mode and owner of the one already there.
ff_install_dir() {
  if ff_staged; then
    install -d -m "$1" "$ff_root$4"
    ff_skip "chown $2:$3 $4"
  else
    install -d -o "$2" -g "$3" -m "$1" "$4"
  fi
}

# ff_secure_file MODE OWNER GROUP FILE: an existing file's mode and owner.
ff_secure_file() {
  chmod "$1" "$ff_root$4"
  if ff_staged; then ff_skip "chown $2:$3 $4"; else chown "$2:$3" "$4"; fi
}

ff_systemctl() {
  if ff_staged; then ff_skip "systemctl $*"; else systemctl "$@"; fi
}

# The `footfall` command: the application run by the node found above.
ff_install_command() {
  mkdir -p "$ff_root/usr/local/bin"
  cat > "$ff_root/usr/local/bin/footfall" <<EOF
#!/bin/sh
exec "$ff_node" "$ff_main" "\$@"
EOF
  chmod 0755 "$ff_root/usr/local/bin/footfall"
}

# ff_install_unit NAME: packaging/NAME.service with the real application folder and node in place of /opt/footfall
# and /usr/bin/node (comment lines are left as they are), installed, loaded and enabled.
ff_install_unit() {
  local unit="/etc/systemd/system/$1.service"
  mkdir -p "$ff_root/etc/systemd/system"
  sed -e "/^#/!s#/usr/bin/node#$ff_node#g" -e "/^#/!s#/opt/footfall#$ff_app_dir#g" "$ff_here/$1.service" > "$ff_root$unit"
  chmod 0644 "$ff_root$unit"
  ff_systemctl daemon-reload
  ff_systemctl enable --quiet "$1.service"
  echo "Installed $unit (application: $ff_app_dir, node: $ff_node)"
}

# ff_wait_http URL SECONDS: waits until URL answers 200; fails after SECONDS.
ff_wait_http() {
  "$ff_node" -e '
    const [url, seconds] = process.argv.slice(1);
    const end = Date.now() + Number(seconds) * 1000;
    (async () => {
      for (;;) {
        try {
          const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
          if (res.status === 200) process.exit(0);
        } catch { /* not listening yet */ }
        if (Date.now() >= end) process.exit(1);
        await new Promise((r) => setTimeout(r, 500));
      }
    })();' "$1" "$2"
}
