"""The example's utilities: each change is undone after the test, in reverse order."""

from __future__ import annotations

import shlex

from pytest_mh_ansible import MultihostHost, MultihostUtility


class Files(MultihostUtility[MultihostHost]):
    """Writes files, remembering each file's first content (or absence) to put it back."""

    def setup(self) -> None:
        self._saved: dict[str, str | None] = {}

    def _save(self, path: str) -> None:
        if path in self._saved:
            return
        result = self.host.conn.run(f"cat {shlex.quote(path)}", raise_on_error=False)
        self._saved[path] = result.stdout if result.rc == 0 else None

    def read(self, path: str) -> str:
        return self.host.conn.run(f"cat {shlex.quote(path)}").stdout

    def write(self, path: str, contents: str) -> None:
        self._save(path)
        self._put(path, contents)

    def _put(self, path: str, contents: str) -> None:
        # Replace the file (new inode, same mode and owner): servers that cache file metadata see the change.
        quoted = shlex.quote(path)
        self.host.conn.run(
            f'tmp=$(mktemp {quoted}.XXXXXX) && cat > "$tmp" && '
            f'{{ chmod --reference={quoted} "$tmp" && chown --reference={quoted} "$tmp" || chmod 0644 "$tmp"; }} '
            f'2>/dev/null; mv -f "$tmp" {quoted}',
            input=contents,
        )

    def backup(self, path: str) -> None:
        """Remember ``path`` so that changes made by other means (playbooks) are undone too."""
        self._save(path)

    def teardown(self) -> None:
        for path, contents in reversed(list(self._saved.items())):
            if contents is None:
                self.host.conn.run(f"rm -f {shlex.quote(path)}")
            else:
                self._put(path, contents)
        self._saved.clear()


class Services(MultihostUtility[MultihostHost]):
    """Restarts services; after the test, restarts them again so that they run with restored config."""

    def setup(self) -> None:
        self._touched: list[str] = []

    def restart(self, name: str) -> None:
        if name not in self._touched:
            self._touched.append(name)
        self.host.conn.run(f"service {shlex.quote(name)} restart")

    def is_running(self, name: str) -> bool:
        return self.host.conn.run(f"service {shlex.quote(name)} status", raise_on_error=False).rc == 0

    def teardown(self) -> None:
        for name in reversed(self._touched):
            self.host.conn.run(f"service {shlex.quote(name)} restart")
        self._touched.clear()


class Firewall(MultihostUtility[MultihostHost]):
    """Rejects traffic from other hosts with an nftables table of its own, deleted after the test."""

    TABLE = "mh_example"

    def setup(self) -> None:
        self._created = False

    def reject_from(self, address: str) -> None:
        if not self._created:
            self.host.conn.run(
                f"nft add table inet {self.TABLE} && "
                f"nft add chain inet {self.TABLE} input '{{ type filter hook input priority 0; }}'"
            )
            self._created = True
        self.host.conn.run(
            f"nft add rule inet {self.TABLE} input ip saddr {shlex.quote(address)} reject with tcp reset"
        )

    def rules(self) -> str:
        return self.host.conn.run("nft list ruleset").stdout

    def teardown(self) -> None:
        if self._created:
            self.host.conn.run(f"nft delete table inet {self.TABLE}")
            self._created = False
