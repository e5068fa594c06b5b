"""Services for lab hosts: a dummy sysv daemon to start, stop and restart in tests and benchmarks."""

from __future__ import annotations

__all__ = ["dummy_init_script"]


def dummy_init_script(name: str, description: str = "dummy daemon of pytest-mh-ansible tests") -> str:
    """An LSB init script for ``/etc/init.d/<name>`` whose daemon is a ``sleep`` with a pid file.

    It answers ``start``, ``stop``, ``restart`` and ``status`` (LSB exit codes: 3 when stopped),
    so that ``service``, ``ansible.builtin.service`` and the ``svc`` utility can drive it on a
    sysv lab host, where no real daemon is wanted.

    Example::

        host.conn.run(f"cat > /etc/init.d/demo && chmod 0755 /etc/init.d/demo", input=dummy_init_script("demo"))
        host.svc.start("demo")
    """
    pidfile = f"/run/{name}.pid"
    return f"""#!/bin/sh
### BEGIN INIT INFO
# Provides:          {name}
# Required-Start:    $remote_fs
# Required-Stop:     $remote_fs
# Default-Start:     2 3 4 5
# Default-Stop:      0 1 6
# Short-Description: {description}
### END INIT INFO
PIDFILE={pidfile}
case "$1" in
  start) start-stop-daemon --start --quiet --background --make-pidfile --pidfile $PIDFILE --exec /bin/sleep -- 100000 ;;
  stop) start-stop-daemon --stop --quiet --oknodo --remove-pidfile --pidfile $PIDFILE ;;
  restart) $0 stop; $0 start ;;
  status) start-stop-daemon --status --pidfile $PIDFILE; rc=$?; [ $rc -eq 1 ] && rc=3; exit $rc ;;
  *) echo "usage: $0 start|stop|restart|status"; exit 2 ;;
esac
"""
