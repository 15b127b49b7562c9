"""HTTP clients for the OpenAI-compatible endpoints whose timeout bounds the response body.

httpx's timeouts bound each connect, write and read, so a server that sends its answer a
few bytes at a time never times out, and a build waiting on it waits forever. These
clients also give the response body a deadline: ``timeout`` seconds from the moment the
request is sent. A body still arriving then is cut off with the same ``ReadTimeout`` a
silent server gets, so callers handle both alike (the ``openai`` client turns it into an
``APITimeoutError``); the last read may begin just before the deadline. The wait for the
status line and headers stays bounded per read only.

The deadline comes from event hooks on the ``openai`` client's own default client, so its
proxies (``HTTPS_PROXY``, ``NO_PROXY``…), certificates and connection limits stay as they
are.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import httpx2  # the openai client's HTTP library
import openai

_SENT_AT = "memledger.sent_at"  # a request extension: when the request was sent


def deadline_client(timeout: float) -> httpx2.Client:
    """An ``http_client`` for ``openai.OpenAI`` whose response bodies end within
    ``timeout`` seconds of the request."""
    return openai.DefaultHttpxClient(
        event_hooks={"request": [_note_sent], "response": [_bounded(timeout)]}
    )


def _note_sent(request: httpx2.Request) -> None:
    request.extensions[_SENT_AT] = time.monotonic()


def _bounded(seconds: float) -> Callable[[httpx2.Response], None]:
    def bound(response: httpx2.Response) -> None:
        request = response.request
        deadline = request.extensions[_SENT_AT] + seconds
        assert isinstance(response.stream, httpx2.SyncByteStream)
        response.stream = _BoundedStream(response.stream, deadline, seconds, request)

    return bound


class _BoundedStream(httpx2.SyncByteStream):
    def __init__(
        self, inner: httpx2.SyncByteStream, deadline: float, seconds: float, request: httpx2.Request
    ) -> None:
        self._inner = inner
        self._deadline = deadline
        self._seconds = seconds
        self._request = request

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._inner:
            if time.monotonic() > self._deadline:
                raise httpx2.ReadTimeout(
                    f"the response took longer than {self._seconds:g} s", request=self._request
                )
            yield chunk

    def close(self) -> None:
        self._inner.close()
