"""The example's roles: a web server (nginx or lighttpd) and a client that talks to it."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from pytest_mh_ansible import MultihostFixture, MultihostHost, MultihostRole, PlaybookResult

from .utils import Files, Firewall, Services


class ServerHost(MultihostHost):
    """A web server host: installs, configures and starts its server once per session; all undone at its end.

    The packages come from a module call, whose undo the journal knows (it purges what the call
    installed); the playbook's changes are undone as the playbook names them: the files it writes
    (``revert_paths``, restored) and the service it starts (``teardown``, a playbook that stops it).
    """

    def pytest_setup(self) -> None:
        self.server = str(self.vars["webapp_server"])
        self.service = str(self.vars["webapp_service"])
        self.docroot = str(self.vars["webapp_docroot"])
        self.config_file = str(self.vars["webapp_config"])
        self.ansible.run("ansible.builtin.apt", name=[self.server, "nftables"], state="present")
        # raises PlaybookError (failed tasks, host, message) if it fails
        self.playbook(
            "webapp/server.yml",
            revert_paths=[self.config_file, f"{self.docroot}/index.html"],
            teardown="webapp/server_teardown.yml",
        )


class Server(MultihostRole[ServerHost]):
    """A web server; every change a test makes through it is undone after the test."""

    def __init__(self, mh: MultihostFixture, role: str, host: ServerHost) -> None:
        super().__init__(mh, role, host)
        # Utilities are torn down in reverse order: files are restored before services restart.
        self.services = Services(host)
        self.files = Files(host)
        self.firewall = Firewall(host)

    @property
    def url(self) -> str:
        return f"http://{self.host.hostname}:{self.port}/"

    @property
    def port(self) -> int:
        return int(getattr(self, "_port", 80))

    def write_page(self, text: str, name: str = "index.html") -> None:
        self.files.write(f"{self.host.docroot}/{name}", text)

    def set_port(self, port: int) -> None:
        """Change the listening port in the server's configuration (restart to apply)."""
        config = self.files.read(self.host.config_file)
        if self.host.server == "nginx":
            config = config.replace("listen 80 default_server;", f"listen {port} default_server;")
            config = config.replace("listen [::]:80 default_server;", f"listen [::]:{port} default_server;")
        else:
            config = config.replace("server.port                 = 80", f"server.port                 = {port}")
        self.files.write(self.host.config_file, config)
        self._port = port

    def restart(self) -> None:
        self.services.restart(self.host.service)

    def deploy_page(self, text: str, name: str = "index.html") -> PlaybookResult:
        """Deploy a page with the example's playbook (the page is restored after the test: ``revert_paths``)."""
        page = f"{self.host.docroot}/{name}"
        extra_vars = {"webapp_page_text": text, "webapp_page_name": name}
        return self.playbook("webapp/page.yml", extra_vars=extra_vars, revert_paths=[page])


@dataclass(frozen=True)
class Response:
    status: int
    body: str


class Client(MultihostRole[MultihostHost]):
    """A client host with curl."""

    def get(self, url: str, *, timeout: int = 5) -> Response:
        """GET ``url``; status 0 when the connection failed."""
        result = self.host.conn.run(
            f"curl -sS --max-time {timeout} -w '\\n%{{http_code}}' {shlex.quote(url)}", raise_on_error=False
        )
        if result.rc != 0:
            return Response(0, result.stderr)
        body, _, status = result.stdout.rpartition("\n")
        return Response(int(status), body)
