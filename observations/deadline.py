"""HTTP clients for the OpenAI-compatible endpoints whose timeout bounds a whole response.

httpx's timeouts bound each connect, write and read, so a server that sends its answer a
few bytes at a time never times out, and a build waiting on it waits forever. These
clients also give the response body a deadline: ``timeout`` seconds from the moment the
request is sent. A body still arriving then is cut off with the same ``ReadTimeout`` a
silent server gets, so callers handle both alike (the ``openai`` client turns it into an
``APITimeoutError``). The last read may begin just before the deadline, so a request takes
at most about twice ``timeout``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx2  # the openai client's HTTP library
import openai


def deadline_client(timeout: float) -> httpx2.Client:
    """An ``http_client`` for ``openai.OpenAI`` whose responses end within ``timeout``."""
    return openai.DefaultHttpxClient(transport=_DeadlineTransport(timeout), timeout=timeout)


class _DeadlineTransport(httpx2.BaseTransport):
    def __init__(self, seconds: float) -> None:
        self._seconds = seconds
        self._inner = httpx2.HTTPTransport()

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        deadline = time.monotonic() + self._seconds
        response = self._inner.handle_request(request)
        assert isinstance(response.stream, httpx2.SyncByteStream)
        response.stream = _BoundedStream(response.stream, deadline, self._seconds, request)
        return response

    def close(self) -> None:
        self._inner.close()


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
