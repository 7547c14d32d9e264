#!/bin/sh
# After install and upgrade (deb: "configure"; rpm: 1 or 2): the service
# user, the data dir, the owner and mode of the config and secrets file.
set -e

if ! getent group herald >/dev/null; then
	groupadd --system herald
fi
if ! getent passwd herald >/dev/null; then
	useradd --system --gid herald --home-dir /var/lib/herald --no-create-home \
		--shell /usr/sbin/nologin --comment "herald service" herald
fi

install -d -m 0750 -o herald -g herald /var/lib/herald
chown root:herald /etc/herald /etc/herald/herald.yaml
chmod 0750 /etc/herald
chmod 0640 /etc/herald/herald.yaml
chown herald:herald /etc/herald/secrets.yaml
chmod 0600 /etc/herald/secrets.yaml

if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null || true
	# An upgrade restarts a running service on the new binary; a first
	# install leaves it stopped until the config is edited.
	systemctl try-restart herald.service >/dev/null || true
fi
exit 0
