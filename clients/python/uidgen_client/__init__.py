"""Client of the uidgen ID service (clients/PROTOCOL.md): segment ranges and snowflake
batches fetched from the service and handed out in memory."""

from .aio import AsyncClient
from .client import Client
from .errors import ClosedError, RefusedError, UidgenError, UnavailableError

__all__ = ["Client", "AsyncClient", "UidgenError", "RefusedError", "UnavailableError",
           "ClosedError"]
__version__ = "0.1.0"
