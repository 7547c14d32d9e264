#!/bin/sh
# Before removal (deb: "remove"; rpm: 0) the service stops; an upgrade
# (deb: "upgrade"; rpm: 1) leaves it running for postinstall to restart.
set -e

case "$1" in
remove | 0)
	if [ -d /run/systemd/system ]; then
		systemctl disable --now herald.service >/dev/null 2>&1 || true
	fi
	;;
esac
exit 0
