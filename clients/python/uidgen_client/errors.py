"""The errors a uidgen client raises."""

from typing import List, Optional, Tuple


class UidgenError(Exception):
    """Base of every error this package raises."""


class RefusedError(UidgenError):
    """A server answered a 4xx other than 408: the request itself is wrong (bad token,
    unknown tag, bad count), so it is raised at once and not tried elsewhere."""

    def __init__(self, status: int, error: str, limit: Optional[str], server: str):
        self.status = status
        self.error = error
        self.limit = limit
        self.server = server
        text = f"{server} refused the request (HTTP {status}): {error}"
        if limit:
            text += f" (limit: {limit})"
        super().__init__(text)


class UnavailableError(UidgenError):
    """Every server failed in one call; `attempts` holds (server, what it answered)."""

    def __init__(self, attempts: List[Tuple[str, str]]):
        self.attempts = attempts
        named = "; ".join(f"{server}: {answer}" for server, answer in attempts)
        super().__init__(f"every uidgen server failed: {named}")


class ClosedError(UidgenError):
    """The client was closed: it hands out nothing any more."""

    def __init__(self) -> None:
        super().__init__("the uidgen client is closed")
