"""The warm module agent: runs on the target, stdlib only, sent there by :mod:`.warm` (not imported locally).

One agent runs per (host, become user, interpreter) for the session. It imports the
``ansible.module_utils`` that every module needs once, freezes its heap, and then, for each
module call, forks a child that executes the *unmodified* AnsiballZ payload exactly as a
fresh ``python3`` reading it from stdin would: fresh stdio pipes, the caller's environment
and working directory, ``sys.argv``/``sys.path`` of a new interpreter, a new ``__main__``.
The child is never reused, so modules cannot leak state into each other.

The same agent also runs shell commands (``op: exec``), for the transport's commands: it
forks and execs the argv it is given in a new session, as sshd would start it, with the
environment the agent itself was started with (read from ``/proc/self/environ``, before
Python changed anything), and stdin from the request. A command costs a fork and an exec on
the target and a round trip on the open channel, instead of a new ``ssh`` client process.

Protocol (on dup'ed copies of fds 0 and 1; the agent never prints): frames of a 4-byte
big-endian length and the bytes. Request: a JSON header (``op``: ``run``, ``exec``, ``step``, ``stale``,
``script``, ``put``, ``fetch`` or ``exit``), then for ``run`` the payload, for ``exec`` the command's stdin, for
``script`` the Python source. A ``run`` header may name the payload's zip (``zip_ref``, its
sha1) instead of the payload carrying it: the zip literal is then empty, and the agent uses
the one it kept from an earlier payload (each answer of a ``run`` says ``kept`` with the sha1
of the zip the agent holds). A ``run`` header may also carry a command to run right before the
module (``before``: ``{"argv": [...]}``, run as ``exec`` runs one, once the payload is known to
be served): its answer says ``before`` (``rc`` and ``stdout``, base64), and a command that exits
non-zero holds the module back (``held``: the module did not run). The rollback journal's probe
of an account and its entry travel so with the account's change (one round trip, not two). Answer: a JSON
header (``rc``, or ``fallback`` with a reason, and timings), then stdout and stderr. ``stale``
(with an empty payload) answers ``{"stale": [paths]}``: the files behind what the agent has
loaded (its modules, its shared libraries, the interpreter, the directories of ``sys.path``,
os-release) that changed since it preloaded the first payload's module_utils (an agent that has
not preloaded cannot tell, and says so), so that a package change renews only the agents it
could affect. ``script`` runs a stdlib-only Python source of the controller's in a forked child
with the header's ``request`` (the journal's snapshots: no module payload to build).

``step`` (empty payload) does one of the action plugins' own shell steps with system calls
(:mod:`.shell_steps` reads the command back into the header: ``do`` ``home``, ``mkdtemp``,
``chmod`` or ``remove``), answering what the command would (``rc``, stdout, stderr) with no fork.

File transfers of action plugins (``copy``, ``template``, ``fetch``) come as ``put`` (header:
``path``, ``mode``; payload: the file's bytes; the agent writes the file itself, as this user,
with its umask, as an sftp upload does) and ``fetch`` (header: ``path``, ``limit``; answer: the
file's ``mode``, its bytes as stdout, or a ``fallback`` for a file larger than ``limit``).
Either answers ``rc`` 1 and an ``error`` when the file cannot be written or read: the controller
then takes the standard path, which reports it in Ansible's words.

Python 3.6+ syntax only: the target's interpreter may be older than the controller's.
"""

import atexit
import base64
import errno
import gc
import hashlib
import importlib
import io
import json
import os
import pwd
import re
import selectors
import shutil
import signal
import stat
import sys
import tempfile
import threading
import time
import types
import zipfile
import zipimport

AGENT_PID = os.getpid()
IN_FD = OUT_FD = -1  # the protocol's fds, set by _take_stdio()


def _take_stdio():
    """Move the protocol off fds 0 and 1: modules must find an empty stdin and their own stdout."""
    global IN_FD, OUT_FD
    IN_FD = os.dup(0)
    OUT_FD = os.dup(1)
    # fd 0 becomes an empty pipe at EOF, as a pipelined module finds it; fd 1 a pipe nobody reads.
    r, w = os.pipe()
    os.close(w)
    os.dup2(r, 0)
    os.close(r)
    r, w = os.pipe()
    os.dup2(w, 1)
    os.close(w)
    os.close(r)
    for fd in (IN_FD, OUT_FD):
        os.set_inheritable(fd, False)


FRESH_ENV = dict(os.environ)
# sudo records the command it ran: the agent's boot reader, where a module run the standard way finds
# just the interpreter ("/bin/sh -c echo BECOME-SUCCESS-<key> ; /usr/bin/python3").
_cut = FRESH_ENV.get("SUDO_COMMAND", "").find(" -c '#mh-warm-agent")
if _cut >= 0:
    FRESH_ENV["SUDO_COMMAND"] = FRESH_ENV["SUDO_COMMAND"][:_cut]


def _initial_env():
    """The environment this process was started with: Python may have changed os.environ since
    (PEP 538 sets LC_CTYPE in a C locale), and a command must see what it would see over ssh."""
    try:
        with open("/proc/self/environ", "rb") as f:
            raw = f.read()
    except OSError:
        return dict(FRESH_ENV)
    env = {}
    for item in raw.split(b"\0"):
        name, sep, value = item.partition(b"=")
        if sep and name:
            env[os.fsdecode(name)] = os.fsdecode(value)
    if "SUDO_COMMAND" in FRESH_ENV:
        env["SUDO_COMMAND"] = FRESH_ENV["SUDO_COMMAND"]
    return env


COMMAND_ENV = _initial_env()
FRESH_PATH = list(sys.path)
INTERP_ARGV0 = list(getattr(sys, "orig_argv", [sys.executable])[:1])
FAST_EXIT = os.environ.get("MH_WARM_FULL_EXIT") != "1"
FRESH_ENV.pop("MH_WARM_FULL_EXIT", None)
ZIP_RE = re.compile(rb"\nzip_data='([A-Za-z0-9+/=]*)',\n")
PRELOAD_ROOTS = ("ansible.module_utils.basic", "ansible.module_utils._internal._ansiballz._loader")
# Set by a task's environment, these are read when an interpreter starts: a fork cannot honour them.
STARTUP_ENV = re.compile(r"^(PYTHON\w*|LD_\w+|LANG|LC_\w+)$")

_buffer = b""
_preload_dir = None
_preloaded = {}  # path inside the zip -> source bytes, for what the parent imported
_zips = {}  # sha1 of the payload zip -> (fallback reason or None, {path in zip: code})
_zip_literals = {}  # sha1 of the payload zip -> its base64 text, for payloads that name it instead of carrying it
# The module_utils a module imported (its child reports them): the agent imports them too, after
# answering, so that the module's next calls find them loaded, as they find ``basic``.
PRELOADABLE = re.compile(r"^(ansible\.module_utils|ansible_collections\.\w+\.\w+\.plugins\.module_utils)(\.|$)")
_preload_rounds = [0]
_preloaded_list = []  # (module, its path inside the zip) of each module imported from a preload zip
_later = []  # work for after the answer is written: (function, arguments)


def _stdlib_dirs():
    import sysconfig

    paths = sysconfig.get_paths()
    return tuple(sorted({os.path.join(paths[key], "") for key in ("stdlib", "platstdlib") if paths.get(key)}))


# The standard library's modules that a child imported and the agent has not (a module's ``pty``
# or ``ctypes.util``, the journal script's ``shutil``): the agent imports them too, after
# answering, so that the next children find them loaded. Only files of the interpreter's own
# library (not its site-packages), never one of these, which act when imported, and never one
# that warns when imported (a child's import would no longer warn): see _import_stdlib().
STDLIB_DIRS = _stdlib_dirs()
NOT_PRELOADED = re.compile(
    r"^(__main__|antigravity|this|idlelib|tkinter|turtle\w*|readline|rlcompleter|site|sitecustomize|"
    r"usercustomize|test|ensurepip|venv|pydoc_data|lib2to3)(\.|$)"
)
_not_preloadable = set()  # names that warned or failed when the agent imported them: not tried again


def _read_exact(n):
    global _buffer
    if len(_buffer) < n:
        # Gathered in a bytearray: a file's bytes (``put``) come in many reads, and joining bytes
        # objects one read at a time copies the whole of what came so far each time.
        gathered = bytearray(_buffer)
        while len(gathered) < n:
            chunk = os.read(IN_FD, max(65536, n - len(gathered)))
            if not chunk:
                _buffer = bytes(gathered)
                return None
            gathered += chunk
        _buffer = bytes(gathered)
    data, _buffer = _buffer[:n], _buffer[n:]
    return data


def read_frame():
    head = _read_exact(4)
    if head is None:
        return None
    return _read_exact(int.from_bytes(head, "big"))


def write_frame(data):
    view = memoryview(len(data).to_bytes(4, "big") + data)
    while view:
        view = view[os.write(OUT_FD, view) :]


# --- preloading and payload checks (parent) --------------------------------------------------


def _preload(zip_bytes, names=PRELOAD_ROOTS):
    """Import ``names`` from a payload's zip: first the module_utils every module needs, from the
    first payload; later those that a module's child reported it imported (see :func:`_preload_later`).

    A name that fails to import is left to the modules, which import it themselves as before.
    """
    import shutil

    global _preload_dir
    if _preload_dir is None:
        _reap_stale()
        _preload_dir = tempfile.mkdtemp(prefix="mh-warm-%d-" % AGENT_PID)
    else:
        os.mkdir(_preload_dir, 0o700)
    _preload_rounds[0] += 1
    # A new file name each round: zipimport caches a zip's directory by its path.
    path = os.path.join(_preload_dir, "preload%d.zip" % _preload_rounds[0])
    try:
        with open(path, "wb") as f:
            f.write(zip_bytes)
        _point_packages_at(path)  # the packages preloaded before search this round's zip for new modules
        sys.path.insert(0, path)
        try:
            for name in names:
                try:
                    importlib.import_module(name)
                except Exception:
                    if name in PRELOAD_ROOTS:
                        raise
        finally:
            sys.path.remove(path)
            sys.path_importer_cache.pop(path, None)
            zipimport._zip_directory_cache.pop(path, None)
        with zipfile.ZipFile(path) as z:
            for module in list(sys.modules.values()):
                filename = getattr(module, "__file__", None) or ""
                if filename.startswith(path + os.sep):
                    inner = filename[len(path) + 1 :]
                    _preloaded[inner] = z.read(inner)
    finally:
        # Imported code lives in memory: the agent keeps no file on the target (each child points
        # the preloaded modules' files and loaders at its own payload zip, which has the same sources).
        shutil.rmtree(_preload_dir, ignore_errors=True)
        _forget_importers(_preload_dir)
        _list_preloaded()
    _take_fingerprint()
    gc.collect()
    if hasattr(gc, "freeze"):
        gc.freeze()


def _preloaded_modules():
    """(module, its path inside the zip) for each module the agent imported from a payload's zip.

    Listed once per preload (:func:`_list_preloaded`): a child reads it, where a walk of the ~1,000
    modules in ``sys.modules`` would cost each module call a few tenths of a millisecond.
    """
    return _preloaded_list


def _list_preloaded():
    if _preload_dir is None:
        return
    found = []
    for module in list(sys.modules.values()):
        filename = getattr(module, "__file__", None) or ""
        if filename.startswith(_preload_dir + os.sep):
            found.append((module, filename.split(".zip" + os.sep, 1)[1]))
    _preloaded_list[:] = found


def _forget_importers(directory):
    """Drop the import system's finders of paths under ``directory`` (the preload zips: deleted).

    The packages imported from a preload zip leave a zip importer for each of their directories in
    ``sys.path_importer_cache``, which nothing consults again (their ``__path__`` moves on to the
    next zip). Kept, they made each child's ``importlib.invalidate_caches()`` try to read every one
    of those deleted zips again (0.4 ms of a module call on a lab host).
    """
    prefix = directory + os.sep
    for cache in (sys.path_importer_cache, zipimport._zip_directory_cache):
        for path in [path for path in cache if isinstance(path, str) and path.startswith(prefix)]:
            del cache[path]


def _search_in(module, zip_path, inner):
    """Make a package's submodule search (``__path__``) look into ``zip_path``; other modules have none."""
    search = getattr(module, "__path__", None)
    if search is None:
        return
    new = [os.path.join(zip_path, os.path.dirname(inner))]
    if isinstance(search, list):
        search[:] = new
    else:
        module.__path__ = new


def _point_packages_at(zip_path):
    """Make the preloaded packages look for new submodules in ``zip_path`` (the next preload's zip)."""
    for module, inner in _preloaded_modules():
        _search_in(module, zip_path, inner)


def _preload_later(key, names_r):
    """Queue the preload of what a module's child reported it imported and the agent has not."""
    reported = _read_names(names_r)
    names = [name for name in reported if PRELOADABLE.match(name) and name not in sys.modules]
    if names and _preload_dir is not None:
        _later.append((_preload, (base64.b64decode(_zip_literals[key]), sorted(names))))
    _import_stdlib_later(reported)


def _read_to_end(fd):
    """All that a child writes on pipe ``fd`` until it closes its end; ``fd`` is closed."""
    chunks = []
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


def _read_names(names_r):
    """What a child reported on its names pipe (read to its end), a name a line."""
    return _read_to_end(names_r).decode("ascii", "replace").split()


def _import_stdlib_later(reported):
    """Queue the import of the standard library's modules that a child reported (``std:`` names)."""
    names = [
        name[4:]
        for name in reported
        if name.startswith("std:") and name[4:] not in sys.modules and name[4:] not in _not_preloadable
    ]
    if names:
        _later.append((_import_stdlib, (sorted(names),)))


def _import_stdlib(names):
    """Import ``names`` of the standard library into the agent, so that its next children have them.

    A module that warns when imported (a deprecated one) is taken out again, with what its import
    brought in: a child must see the warning as a fresh interpreter would. One that fails to
    import is left to the children, as before.
    """
    import warnings

    for name in names:
        if name in sys.modules:
            continue
        before = set(sys.modules)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                importlib.import_module(name)
            except Exception:
                caught.append(None)
        if caught:
            _not_preloadable.add(name)
            for new in set(sys.modules) - before:
                parent, _, child = new.rpartition(".")
                if parent in sys.modules and getattr(sys.modules[parent], child, None) is sys.modules[new]:
                    delattr(sys.modules[parent], child)
                del sys.modules[new]
    if _fingerprint:  # a package change must renew an agent whose loaded files changed: these too
        _take_fingerprint()
    if hasattr(gc, "freeze"):
        gc.freeze()


def _loaded_files():
    """The files whose change a fresh interpreter would see and this agent would not."""
    global _libraries_unknown
    paths = {sys.executable, "/etc/os-release", "/usr/lib/os-release"}
    paths.update(entry for entry in FRESH_PATH if entry)  # a new package adds a module to one of them
    for module in list(sys.modules.values()):
        filename = getattr(module, "__file__", None)
        if filename and (_preload_dir is None or not filename.startswith(_preload_dir)):
            paths.add(filename)
    try:  # shared libraries (libpython, libcrypto for hashlib, _selinux, ...): Linux only
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split(None, 5)
                if len(fields) == 6 and fields[5].startswith("/"):
                    paths.add(fields[5].rstrip("\n"))
    except OSError:
        _libraries_unknown = True  # no /proc: the agent counts as stale after any package change
    return paths


def _stat_key(path):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


_fingerprint = {}  # path -> _stat_key when the agent loaded it
_libraries_unknown = False


def _take_fingerprint():
    """Once the module_utils are preloaded (commands-only agents never need it, nor pay for it)."""
    for path in _loaded_files():
        if path not in _fingerprint:
            _fingerprint[path] = _stat_key(path)


def _stale(header, payload):
    """The loaded files that changed (replaced, rewritten, removed) since the agent loaded them."""
    if not _fingerprint:  # no module payload preloaded yet: nothing to compare with, so it counts as stale
        return {"stale": ["(no fingerprint: nothing preloaded)"], "checked": 0}, b"", b""
    changed = sorted(path for path, key in _fingerprint.items() if _stat_key(path) != key)
    if _libraries_unknown:
        changed.insert(0, "(its shared libraries: /proc/self/maps is unreadable)")
    return {"stale": changed[:20], "checked": len(_fingerprint)}, b"", b""


def _reap_stale():
    """Remove preload dirs of this user's agents that were killed (SIGKILL leaves them behind)."""
    import shutil

    base = tempfile.gettempdir()
    try:
        names = os.listdir(base)
    except OSError:
        return
    for name in names:
        match = re.match(r"^mh-warm-(\d+)-", name)
        if not match:
            continue
        path = os.path.join(base, name)
        try:
            if os.lstat(path).st_uid != os.getuid():
                continue
            os.kill(int(match.group(1)), 0)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
        except OSError:
            continue


def _check_zip(zip_b64, key):
    """(fallback reason or None, code cache) for a payload zip; computed once per zip."""
    if key in _zips:
        return _zips[key]
    zip_bytes = base64.b64decode(zip_b64)
    if _preload_dir is None:
        _preload(zip_bytes)
    reason = None
    code = {}
    with zipfile.ZipFile(io.BytesIO(zip_bytes)) as z:
        names = set(z.namelist())
        for inner, source in _preloaded.items():
            if inner in names and z.read(inner) != source:
                reason = "the payload's %s differs from the preloaded one (another ansible-core?)" % inner
                break
        if reason is None:
            for inner in names:
                if inner.endswith(".py") and inner not in _preloaded:
                    source = z.read(inner).replace(b"\r\n", b"\n").replace(b"\r", b"\n")
                    code[inner] = compile(source, "<mh-warm>/" + inner, "exec", dont_inherit=True)
    _zips[key] = (reason, code)
    if hasattr(gc, "freeze"):
        gc.freeze()
    return _zips[key]


# --- the child's import glue -------------------------------------------------------------------


def _relocated(code, filename):
    consts = tuple(_relocated(c, filename) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


class _LazyZipLoader:
    """A preloaded module's loader: the payload zip's zipimporter of its directory, made when first used.

    Only a traceback's source lines (or a module reading its own resources) need one; making
    one for each directory of the preloaded modules in every child cost milliseconds.
    """

    def __init__(self, prefix):
        self._prefix = prefix
        self._real = None

    def __getattr__(self, name):
        if self._real is None:
            self._real = zipimport.zipimporter(self._prefix)
        return getattr(self._real, name)


class _PayloadZipFinder:
    """Once the wrapper has put the payload zip on sys.path, point preloaded packages at it."""

    done = False

    def find_spec(self, fullname, path=None, target=None):
        if not self.done and sys.path and sys.path[0].endswith("_payload.zip"):
            type(self).done = True
            payload_zip = sys.path[0]
            loaders = {}
            for module, inner in _preloaded_modules():
                module.__file__ = os.path.join(payload_zip, inner)
                # Source lines for tracebacks come from the module's loader: the payload zip's.
                parent = os.path.dirname(inner)
                if parent not in loaders:
                    loaders[parent] = _LazyZipLoader(os.path.join(payload_zip, parent) + os.sep)
                module.__loader__ = loaders[parent]
                _search_in(module, payload_zip, inner)
            deprecator = sys.modules.get("ansible.module_utils._internal._deprecator")
            if deprecator is not None and hasattr(deprecator, "_ANSIBLE_MODULE_BASE_PATH"):
                import pathlib

                deprecator._ANSIBLE_MODULE_BASE_PATH = pathlib.Path(payload_zip) / "ansible"
        return None


_CODE = {}


class _CachedZipImporter(zipimport.zipimporter):
    """zipimport, but with the code the agent compiled once per payload zip (3.11 compiles twice)."""

    def _inner(self, fullname):
        last = fullname.rpartition(".")[2]
        for candidate in (self.prefix + last + "/__init__.py", self.prefix + last + ".py"):
            if candidate in _CODE:
                return candidate
        return None

    def get_filename(self, fullname):
        inner = self._inner(fullname)
        if inner is None:
            return zipimport.zipimporter.get_filename(self, fullname)
        return os.path.join(self.archive, inner)

    def get_code(self, fullname):
        inner = self._inner(fullname)
        if inner is None:
            return zipimport.zipimporter.get_code(self, fullname)
        return _relocated(_CODE[inner], os.path.join(self.archive, inner))


def _payload_path_hook(path):
    if "_payload.zip" not in path:
        raise ImportError("not a payload zip")
    return _CachedZipImporter(path)


# --- running one call -------------------------------------------------------------------------


def _exit_code(exc):
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        sys.stderr.write(str(code) + "\n")
    except Exception:
        pass
    return 1


try:  # a module child dies with its agent (Linux): nothing keeps running for a controller that is gone
    import ctypes

    _prctl = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None
except Exception:
    _prctl = None


def _stdlib_module(name, module, known):
    """Whether a child's ``module`` is one of the standard library's that the agent can import too."""
    if name in known or NOT_PRELOADED.match(name):
        return False
    filename = getattr(module, "__file__", None) or ""
    return (
        filename.startswith(STDLIB_DIRS)
        and os.sep + "site-packages" + os.sep not in filename
        and os.sep + "dist-packages" + os.sep not in filename
    )


def _report_imports(names_w, known):
    """Tell the agent which module_utils this module imported from its payload, and which modules of
    the standard library it imported that the agent (``known``: its modules at the fork) has not.

    Names, one a line; the standard library's with a ``std:`` prefix.
    """
    try:
        names = []
        for name, module in list(sys.modules.items()):
            if PRELOADABLE.match(name) and "_payload.zip" + os.sep in (getattr(module, "__file__", None) or ""):
                names.append(name)
            elif _stdlib_module(name, module, known):
                names.append("std:" + name)
        data = "\n".join(names).encode("ascii", "replace")
        if len(data) > 60000:  # within the pipe's buffer: the write never blocks
            data = data[: data.rfind(b"\n", 0, 60000)]
        os.write(names_w, data)
    except Exception:
        pass


def _child(header, code, code_cache, pipes):
    """Become what ``/bin/sh -c 'python3'`` with the payload on stdin would be, and run it."""
    if _prctl is not None:
        _prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() != AGENT_PID:
            os._exit(137)
    out_w, err_w, names_w, status_w = pipes  # stdout, stderr, the module_utils it imported, its exit status
    known = frozenset(sys.modules)  # the agent's modules
    os.dup2(out_w, 1)
    os.dup2(err_w, 2)
    os.close(out_w)
    os.close(err_w)
    for fd in (IN_FD, OUT_FD):
        os.close(fd)
    os.environ.clear()
    os.environ.update(header.get("env") or FRESH_ENV)
    os.environ.update(header.get("env_add") or {})
    if header.get("cwd"):
        os.chdir(header["cwd"])
    tempfile.tempdir = None
    time.tzset()
    importlib.invalidate_caches()
    sys.argv = [""]
    if hasattr(sys, "orig_argv"):
        sys.orig_argv = list(INTERP_ARGV0)
    sys.path[:] = FRESH_PATH
    sys.meta_path.insert(0, _PayloadZipFinder())
    _CODE.update(code_cache)
    sys.path_hooks.insert(0, _payload_path_hook)
    import builtins

    main = types.ModuleType("__main__")
    main.__builtins__ = builtins
    sys.modules["__main__"] = main
    rc = 0
    try:
        exec(code, main.__dict__)
    except SystemExit as exc:
        rc = _exit_code(exc)
    except BaseException:
        import traceback

        traceback.print_exc()
        rc = 1
    if not FAST_EXIT:
        raise SystemExit(rc)  # a full interpreter shutdown; agent frames have no unguarded finally
    try:
        threading._shutdown()
    except Exception:
        pass
    try:
        atexit._run_exitfuncs()
    except Exception:
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    _report_imports(names_w, known)
    _report_status(rc, (1, 2, names_w), status_w)
    os._exit(rc)


def _report_status(rc, pipes, status_w):
    """Close the child's pipes and hand its exit status over, before it exits.

    A forked child's exit tears down its copy of the agent's memory before the kernel closes its
    files: the agent, which answers on EOF and this status, no longer waits for that (it reaps the
    child once the answer is out, :func:`_reported_status`).
    """
    try:
        for fd in pipes:
            os.close(fd)
        os.write(status_w, b"%d" % (rc & 0xFF))
    except OSError:
        pass


def _payload_code(payload, match, key):
    """The payload's code object, as ``compile(payload, "<stdin>", "exec")`` makes it.

    The zip's base64 literal is most of a payload's source: the source is compiled with a
    placeholder in its place, and the placeholder constant is then swapped for the literal's
    text, which gives the same code object for a fraction of the compile time. The literal
    may be empty (the payload names its zip, ``zip_ref``, and the agent holds the text).
    """
    placeholder = "mh-warm-zip-" + key
    source = payload[: match.start(1)] + placeholder.encode() + payload[match.end(1) :]
    literal = _zip_literals[key]

    def swap(code):
        consts = tuple(
            literal if c == placeholder else swap(c) if isinstance(c, types.CodeType) else c for c in code.co_consts
        )
        return code.replace(co_consts=consts)

    return swap(compile(source, "<stdin>", "exec", dont_inherit=True))


def _run(header, payload):
    match = ZIP_RE.search(payload)
    if match is None:
        return {"fallback": "not an AnsiballZ payload"}, b"", b""
    ref = header.get("zip_ref")
    if ref:
        if match.group(1) or ref not in _zip_literals:
            return {"fallback": "the agent does not hold the payload zip %s" % ref}, b"", b""
        key = ref
    else:
        key = hashlib.sha1(match.group(1)).hexdigest()
        _zip_literals.setdefault(key, match.group(1).decode("ascii"))
    kept = {"kept": key}  # the controller may name this zip instead of sending it from now on
    names = set(header.get("env_add") or ())
    startup = sorted(name for name in names if STARTUP_ENV.match(name))
    if startup:
        return dict(kept, fallback="the task sets %s, read at interpreter start" % ", ".join(startup)), b"", b""
    started = time.monotonic()
    reason, code_cache = _check_zip(_zip_literals[key], key)
    if reason is not None:
        return dict(kept, fallback=reason), b"", b""
    try:
        code = _payload_code(payload, match, key)
    except (SyntaxError, ValueError) as err:  # this interpreter cannot read it: the standard path says how
        return dict(kept, fallback="the payload does not compile here (%s)" % err), b"", b""
    prepared = time.monotonic()
    before = header.get("before")
    if before:
        # The caller's command, run right before the module as ``exec`` runs one; a failure holds the module back.
        done, before_out, _ = _exec(before, b"")
        kept["before"] = {"rc": done["rc"], "stdout": base64.b64encode(before_out).decode("ascii")}
        kept["before_ms"] = done.get("run_ms")
        if done["rc"] != 0:
            return dict(kept, held=True), b"", b""
    forking = time.monotonic()
    # the module's stdout, stderr, the names of the module_utils it imported, its exit status
    (out_r, out_w), (err_r, err_w), (names_r, names_w), (status_r, status_w) = (os.pipe() for _ in range(4))
    pid = os.fork()
    if pid == 0:
        try:
            for fd in (out_r, err_r, names_r, status_r):
                os.close(fd)
            _child(header, code, code_cache, (out_w, err_w, names_w, status_w))
        except SystemExit:
            if FAST_EXIT:
                os._exit(70)
            raise  # full exit: up through main() (no unguarded finally) to the interpreter's shutdown
        except BaseException:
            pass
        os._exit(70)  # never let the child run the agent's own code
    for fd in (out_w, err_w, names_w, status_w):
        os.close(fd)
    _, out, err = _collect(pid, out_r, err_r, reap=False)
    rc = _reported_status(pid, status_r)
    _preload_later(key, names_r)
    timing = {
        "prepare_ms": round((prepared - started) * 1000, 1),
        "run_ms": round((time.monotonic() - forking) * 1000, 1),
    }
    return dict(kept, rc=rc, **timing), out, err


def _reported_status(pid, status_r):
    """The exit status a module's child handed over (:func:`_report_status`), its reaping left for
    after the answer; a child that did not hand it over (killed, or exiting the full way) is reaped
    now, and its status is the one the system gives."""
    reported = _read_to_end(status_r)
    if reported.isdigit():
        _later.append((_reap, (pid,)))
        return int(reported)
    return _reap(pid)


def _reap(pid):
    """Wait for child ``pid`` to end: its exit status as a shell gives it (128 + N if signal N killed it)."""
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _collect(pid, out_r, err_r, in_w=-1, data=b"", *, group=False, reap=True):
    """Feed the child's stdin, gather its stdout and stderr, reap it: (rc, stdout, stderr).

    With ``reap=False`` the child is left to the caller, and rc is None.

    The controller never writes during a call: input on the channel is its end (EOF) or a
    cancel, and the child (its process group, with ``group``) is killed and the agent ends at
    once (a process that escaped the group may hold the pipes open for long).
    """
    chunks = {out_r: [], err_r: []}
    selector = selectors.DefaultSelector()
    selector.register(out_r, selectors.EVENT_READ)
    selector.register(err_r, selectors.EVENT_READ)
    selector.register(IN_FD, selectors.EVENT_READ)
    if in_w >= 0:
        os.set_blocking(in_w, False)
        selector.register(in_w, selectors.EVENT_WRITE)
    view = memoryview(data)
    while any(fd in chunks for fd in selector.get_map()):
        for key, _ in selector.select():
            fd = key.fd
            if fd == IN_FD:
                for kill in (os.killpg, os.kill) if group else (os.kill,):
                    try:
                        kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
                raise SystemExit(0)
            if fd == in_w:
                try:
                    view = view[os.write(fd, view[:65536]) :]
                except BlockingIOError:
                    continue
                except OSError:  # the command closed its stdin: the rest is not wanted
                    view = view[:0]
                if not view:
                    selector.unregister(fd)
                    os.close(fd)
                continue
            chunk = os.read(fd, 65536)
            if chunk:
                chunks[fd].append(chunk)
            else:
                selector.unregister(fd)
                os.close(fd)
    if in_w >= 0 and in_w in selector.get_map():
        os.close(in_w)
    selector.close()
    return _reap(pid) if reap else None, b"".join(chunks[out_r]), b"".join(chunks[err_r])


_DEFAULT_SIGNALS = [getattr(signal, name) for name in ("SIGPIPE", "SIGXFSZ", "SIGINT") if hasattr(signal, name)]


def _exec(header, data):
    """Run ``header["argv"]`` as sshd starts a command: a new session, the login environment, no tty."""
    argv = [str(word) for word in header.get("argv") or ()]
    if not argv:
        return {"rc": 127}, b"", b"mh-warm-agent: no command\n"
    started = time.monotonic()
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            if _prctl is not None:
                _prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: dies with the agent
            os.setsid()
            for number in _DEFAULT_SIGNALS:
                signal.signal(number, signal.SIG_DFL)
            for src, dst in ((in_r, 0), (out_w, 1), (err_w, 2)):
                os.dup2(src, dst)
            os.closerange(3, 65536)
            env = dict(header.get("env") or COMMAND_ENV)
            env.update(header.get("env_add") or {})
            if "_" in env and argv[0].startswith("/"):
                env["_"] = argv[0]  # as the login shell that runs a command over ssh sets it
            os.execvpe(argv[0], argv, env)
        except BaseException:
            try:
                os.write(2, ("mh-warm-agent: cannot run %s\n" % argv[0]).encode())
            except BaseException:
                pass
        os._exit(127)
    for fd in (in_r, out_w, err_w):
        os.close(fd)
    if not data:
        os.close(in_w)
        in_w = -1
    rc, out, err = _collect(pid, out_r, err_r, in_w, data, group=True)
    return {"rc": rc, "run_ms": round((time.monotonic() - started) * 1000, 1)}, out, err


_SCRIPTS = {}


def _script(header, source):
    """Run ``source``, stdlib-only Python of the controller's, in a forked child: what it prints is the answer.

    For the controller's own bookkeeping that needs no module (the rollback journal's snapshots
    of paths): no AnsiballZ payload to build, send and unpack, no argument spec. The source is
    compiled once per content; the child finds the header's ``request`` as ``REQUEST``, and its
    globals are its own, so nothing stays in the agent between calls.
    """
    started = time.monotonic()
    key = hashlib.sha256(source).hexdigest()
    code = _SCRIPTS.get(key)
    if code is None:
        try:
            code = _SCRIPTS[key] = compile(source, "<mh-script>", "exec")
        except SyntaxError as err:
            return {"rc": 1}, b"", ("mh-warm-agent: the script does not compile: %s\n" % err).encode()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    names_r, names_w = os.pipe()  # the standard library's modules it imported (see _report_imports)
    status_r, status_w = os.pipe()  # its exit status (see _report_status)
    pid = os.fork()
    if pid == 0:
        rc = 70
        try:
            if _prctl is not None:
                _prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: dies with the agent
            known = frozenset(sys.modules)
            for fd in (out_r, err_r, names_r, status_r):
                os.close(fd)
            os.dup2(out_w, 1)
            os.dup2(err_w, 2)
            for fd in (out_w, err_w, IN_FD, OUT_FD):
                os.close(fd)
            import builtins

            rc = 0
            try:
                exec(code, {"__name__": "__mh_script__", "__builtins__": builtins, "REQUEST": header.get("request")})
            except SystemExit as exc:
                rc = _exit_code(exc)
            except BaseException:
                import traceback

                traceback.print_exc()
                rc = 1
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:
                    pass
            _report_imports(names_w, known)
            _report_status(rc, (1, 2, names_w), status_w)
        finally:
            os._exit(rc)  # never let the child run the agent's own code
    for fd in (out_w, err_w, names_w, status_w):
        os.close(fd)
    _, out, err = _collect(pid, out_r, err_r, reap=False)
    rc = _reported_status(pid, status_r)
    _import_stdlib_later(_read_names(names_r))
    return {"rc": rc, "run_ms": round((time.monotonic() - started) * 1000, 1)}, out, err


def _put(header, data):
    """Write ``data`` to ``header["path"]`` as an sftp upload by this user does: a new file is created
    with ``header["mode"]`` less the umask, an existing one is truncated and keeps its mode."""
    path = header.get("path") or ""
    mode = int(header.get("mode", 0o666)) & 0o777
    started = time.monotonic()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
    except OSError as err:
        return {"rc": 1, "error": "%s: %s" % (path, err.strerror)}, b"", b""
    return {"rc": 0, "size": len(data), "run_ms": round((time.monotonic() - started) * 1000, 1)}, b"", b""


def _fetch(header, _data):
    """Read the regular file ``header["path"]``: its bytes are the answer's stdout, its mode in the header.

    A file larger than ``header["limit"]`` is not read: the answer is a fallback, the controller
    takes the standard path for it.
    """
    path = header.get("path") or ""
    limit = int(header.get("limit") or 0)
    started = time.monotonic()
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return {"rc": 1, "error": "%s: not a regular file" % path}, b"", b""
            if limit and info.st_size > limit:
                return {"fallback": "%s has %d bytes, more than %d" % (path, info.st_size, limit)}, b"", b""
            chunks = []
            size = 0
            while True:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    break
                size += len(chunk)
                if limit and size > limit:  # it grew while read
                    return {"fallback": "%s grew to more than %d bytes" % (path, limit)}, b"", b""
                chunks.append(chunk)
        finally:
            os.close(fd)
    except OSError as err:
        return {"rc": 1, "error": "%s: %s" % (path, err.strerror)}, b"", b""
    answer = {"rc": 0, "mode": info.st_mode & 0o7777, "run_ms": round((time.monotonic() - started) * 1000, 1)}
    return answer, b"".join(chunks), b""


def _step(header, _data):
    """One of the action plugins' own shell steps, done with system calls (see :mod:`.shell_steps`).

    The answer is what the shell command would give: ``rc``, and its stdout and stderr. A case the
    shell would treat differently than these calls (a symlink named with a trailing slash, no HOME)
    answers a ``fallback``: the controller runs the command in a shell.
    """
    started = time.monotonic()
    do = header.get("do")
    if do == "home":
        user = header.get("user") or ""
        if user:
            try:
                home = pwd.getpwnam(user).pw_dir
            except KeyError:
                home = "~" + user  # the shell leaves an unknown user's tilde as it is
        elif "HOME" in COMMAND_ENV:
            home = COMMAND_ENV["HOME"]
        else:
            return {"fallback": "no HOME in the login environment"}, b"", b""
        out, err, rc = (home + "\n").encode(), b"", 0
    elif do == "mkdtemp":
        out, err, rc = _mkdtemp(header["base"], header["path"], int(header["umask"]))
    elif do == "chmod":
        out, err, rc = _chmod(header["paths"], int(header.get("add") or 0), int(header.get("drop") or 0))
    elif do == "remove":
        path = header["path"]
        if path.endswith("/") and os.path.islink(path.rstrip("/")):
            return {"fallback": "%s names a symlink with a trailing slash" % path}, b"", b""
        out, err, rc = b"", b"", _remove(path, bool(header.get("recurse")))
    else:
        return {"fallback": "no such step: %r" % (do,)}, b"", b""
    return {"rc": rc, "run_ms": round((time.monotonic() - started) * 1000, 1)}, out, err


def _mkdtemp(base, path, umask):
    """``( umask U && mkdir -p BASE && mkdir PATH && echo NAME=PATH )``."""
    old = os.umask(umask)
    try:
        for target, make in ((base, lambda p: os.makedirs(p, exist_ok=True)), (path, os.mkdir)):
            try:
                make(target)
            except OSError as err:
                return b"", ("mkdir: cannot create directory '%s': %s\n" % (target, err.strerror)).encode(), 1
    finally:
        os.umask(old)
    return ("%s=%s\n" % (os.path.basename(path), path)).encode(), b"", 0


def _chmod(paths, add, drop):
    """``chmod [ugoa]+-[rwx] PATH...``: each path's mode with ``add`` set and ``drop`` cleared."""
    errors = []
    for path in paths:
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
            os.chmod(path, (mode | add) & ~drop)
        except OSError as err:
            verb = "access" if err.errno == errno.ENOENT else "change permissions of"
            errors.append("chmod: cannot %s '%s': %s\n" % (verb, path, err.strerror))
    return b"", "".join(errors).encode(), 1 if errors else 0


def _remove(path, recurse):
    """``rm -f [-r] PATH``: its exit status (its messages go to /dev/null)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return 0
    except OSError:
        return 1
    if not stat.S_ISDIR(info.st_mode):
        try:
            os.unlink(path)
        except FileNotFoundError:
            return 0
        except OSError:
            return 1
        return 0
    if not recurse:
        return 1
    failed = []
    shutil.rmtree(path, onerror=lambda *args: failed.append(args))
    return 1 if failed else 0


_OPS = {
    "run": _run,
    "exec": _exec,
    "step": _step,
    "stale": _stale,
    "script": _script,
    "put": _put,
    "fetch": _fetch,
}


def main():
    os.write(OUT_FD, b"\nMHWARM-READY\n")
    write_frame(json.dumps({"protocol": 4, "pid": AGENT_PID, "python": sys.version.split()[0]}).encode())
    while True:
        raw = read_frame()
        if raw is None:
            break
        header = json.loads(raw.decode())
        op = header.get("op")
        if op not in _OPS:
            break
        payload = read_frame()
        if payload is None:
            break
        write_frame(b"accepted")  # from here on, the payload may run: the controller must not retry it
        answer, out, err = _OPS[op](header, payload)
        write_frame(json.dumps(answer).encode())
        write_frame(out)
        write_frame(err)
        while _later:  # the answer is out: the controller is not kept waiting for this
            function, args = _later.pop(0)
            try:
                function(*args)
            except Exception:  # a preload that failed (a full disk): the modules import their own
                pass


if __name__ == "mh_warm_agent":  # run by the boot reader on the target; importing this module does nothing
    _take_stdio()
    main()
