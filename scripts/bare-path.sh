#!/usr/bin/env bash
# Prints a PATH under which this machine looks like a bare Debian 12 with Node alone, as far as Footfall's tests can
# tell: a fresh folder of symlinks to every command on the current PATH except those the Debian packages that
# .ci/run installs provide (ffmpeg, chromium and its headless shell, GStreamer, shellcheck, systemd-nspawn, debootstrap, mosquitto, postgresql, haproxy, ...). The tests look
# every tool up on PATH (never by a fixed /usr/bin path), so under it they really do not find them.
#   PATH="$(scripts/bare-path.sh /tmp/bare-bin)" npm test
set -euo pipefail
dir="${1:?usage: bare-path.sh DIR}"
rm -rf "$dir"
mkdir -p "$dir"
hidden='^(ffmpeg|ffprobe|ffplay|chromium|chromium-headless-shell|chromium-browser|chrome|google-chrome|gst-.*|shellcheck|systemd-nspawn|machinectl|debootstrap|mosquitto|mosquitto_.*|postgres|postmaster|initdb|pg_.*|psql|createdb|dropdb|createuser|dropuser|pgbench|haproxy|halog)$'
IFS=: read -r -a dirs <<<"$PATH"
for d in "${dirs[@]}"; do
  [ -d "$d" ] || continue
  for f in "$d"/*; do
    name="${f##*/}"
    if [ ! -x "$f" ] || [ -d "$f" ]; then continue; fi
    [[ "$name" =~ $hidden ]] && continue
    [ -e "$dir/$name" ] || ln -s "$f" "$dir/$name"
  done
done
echo "$dir"
