#!/bin/sh
# After removal the data dir stays; purge (deb only: "purge") deletes it
# and whatever dpkg left in /etc/herald, without asking. The herald user
# stays, as files elsewhere (backups) may still be owned by it.
set -e

case "$1" in
purge)
	rm -rf /var/lib/herald /etc/herald
	;;
esac
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || true
fi
exit 0
