"""``served.port_problem``: whether a server could listen on a host and port, asked with real sockets before any
model loads (``onmt_server`` and ``eole serve`` end in one line on its answer)."""
import socket

from onmt_optimal import serving as served


def test_a_free_port_has_no_problem():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert served.port_problem("127.0.0.1", port) is None


def test_a_port_listened_on_is_in_use():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert served.port_problem("127.0.0.1", port) == f"port {port} on 127.0.0.1 is in use"
        assert served.port_problem("0.0.0.0", port) == f"port {port} on 0.0.0.0 is in use"


def test_a_value_that_is_no_port_or_host_is_one_line():
    assert served.port_problem("127.0.0.1", 70000) == "port 70000 is not a port number (0 to 65535)"
    assert served.port_problem("127.0.0.1", "5000") == "port '5000' is not a port number (0 to 65535)"
    problem = served.port_problem("no-such-host.invalid", 5000)
    assert problem.startswith("host 'no-such-host.invalid' cannot be resolved") and "\n" not in problem
