"""Long polling: pull requests parked until a matching message arrives or their suspend time is up."""

from .pull_request import PullRequest
from .pull_request_hold_service import PullRequestHoldService

__all__ = ["PullRequest", "PullRequestHoldService"]
