"""toolstorm for Python: drive the toolstorm proxy (faults at the network boundary, commit
evidence, contracts, cassettes) from Python, and a pytest plugin whose ``toolstorm`` fixture gives
each test a run of its own. Standard library only; the proxy itself is the Node CLI
(installed from a packed tarball while it is not on the npm registry: docs/python.md#install).
"""

from ._cli import find_cli
from .cassette import RECORD_MODES, CassetteSession
from .contract import Contract
from .errors import AdminError, CliNotFoundError, ProxyStartError, ToolstormError
from .proxy import Proxy, Run

__version__ = "0.1.0"

__all__ = [
    "AdminError",
    "CassetteSession",
    "CliNotFoundError",
    "Contract",
    "Proxy",
    "ProxyStartError",
    "RECORD_MODES",
    "Run",
    "ToolstormError",
    "find_cli",
    "__version__",
]
