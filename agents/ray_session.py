"""Joining a Ray cluster or starting a local Ray, with the address checked before any work: the Ray
session of every command that uses Ray (``tafl eval --ray``, ``tafl rate --ray``, ``tafl train``
with an RLlib config, or an AZ config with workers or ``--address``).

:func:`resolve_address` reads the address a command was given (``--address`` / ``--ray ADDRESS``),
else ``RAY_ADDRESS``, else none (a local Ray); :func:`check_address` refuses a malformed address and
one where nothing answers, each in one line (:class:`RayAddressError`). :func:`ray_session` is the
context manager the commands use: it joins the cluster (and leaves it connected as it was) or starts
a local Ray with ``num_cpus`` and shuts it down at the end.

    >>> check_address("localhost:notaport")
    Traceback (most recent call last):
    ...
    agents.ray_session.RayAddressError: Ray address 'localhost:notaport': the port must be a number from 1 to 65535
"""

from __future__ import annotations

import contextlib
import os
import socket
from typing import Iterator

from .schema import ConfigError

__all__ = ["RayAddressError", "resolve_address", "check_address", "ray_session"]


class RayAddressError(ConfigError):
    """A Ray address that is malformed or where no Ray answers (one line)."""

    def __init__(self, message: str):
        self.field = "address"
        ValueError.__init__(self, message)


def resolve_address(given: str | None) -> str | None:
    """The address to join: ``given``, else ``RAY_ADDRESS``, else ``None`` (start a local Ray)."""
    if given is not None:
        return given.strip()
    env = os.environ.get("RAY_ADDRESS", "").strip()
    return env or None


def check_address(address: str, timeout: float = 3.0) -> str:
    """Refuse a malformed address, and a ``HOST:PORT`` where nothing accepts a connection.

    Accepted forms: ``HOST:PORT`` (a head's GCS port, 6379 by default), ``ray://HOST:PORT`` (Ray
    Client, 10001 by default) and ``auto`` (the cluster this machine belongs to)."""
    text = address.strip()
    if text == "auto":
        return text
    rest = text[len("ray://"):] if text.startswith("ray://") else text
    host, sep, port = rest.rpartition(":")
    if not sep or not host:
        raise RayAddressError(f"Ray address {address!r}: expected HOST:PORT (e.g. 127.0.0.1:6379), "
                              "ray://HOST:PORT or auto")
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise RayAddressError(f"Ray address {address!r}: the port must be a number from 1 to 65535")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise RayAddressError(f"Ray address {address!r}: nothing answers there ({why}); start a head with "
                              "'ray start --head' or give the address it printed") from None
    return text


@contextlib.contextmanager
def ray_session(address: str | None, num_cpus: int | None = None) -> Iterator[dict]:
    """Ray for the duration of a command: join ``address`` (already checked) or start a local Ray
    with ``num_cpus``; yields ``{"address", "local", "cpus"}``. A Ray that was already initialised
    in this process is used as it is and left running."""
    import ray

    if ray.is_initialized():
        yield {"address": "already initialised", "local": False, "cpus": ray.cluster_resources().get("CPU")}
        return
    os.environ.setdefault("RAY_DEDUP_LOGS", "1")
    kwargs = {"include_dashboard": False, "logging_level": "ERROR", "log_to_driver": True}
    if address is None:
        # a local Ray for this command only (RAY_ADDRESS must not make it join another one)
        saved = os.environ.pop("RAY_ADDRESS", None)
        try:
            ray.init(num_cpus=num_cpus, **kwargs)
        finally:
            if saved is not None:
                os.environ["RAY_ADDRESS"] = saved
    else:
        try:
            ray.init(address=address, **kwargs)
        except Exception as exc:     # a port that answers but is not a Ray head, a version mismatch ...
            text = " ".join(str(exc).split())[:300] or type(exc).__name__
            raise RayAddressError(f"cannot join the Ray cluster at {address!r}: {text}") from None
    try:
        yield {"address": address or "local", "local": address is None,
               "cpus": ray.cluster_resources().get("CPU")}
    finally:
        ray.shutdown()
