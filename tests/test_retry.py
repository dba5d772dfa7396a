"""carriers/retry.py: the one retry of every attestation commit (bounded attempts, exponential backoff)."""

from __future__ import annotations

import pytest

from carriers import retry as retrying


class Lost(Exception):
    pass


def test_attempts_backoff_and_the_last_error(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(retrying.time, "sleep", slept.append)
    calls: list[int] = []

    def attempt() -> int:
        calls.append(1)
        raise Lost(str(len(calls)))

    with pytest.raises(Lost, match=r"^4$"):  # retries=3: four attempts, the last error raised as it is
        retrying.retry(attempt, retries=3, backoff_s=0.5, retry_on=lambda e: isinstance(e, Lost))
    assert len(calls) == 4 and slept == [0.5, 1.0, 2.0]


def test_a_result_a_refused_error_and_between(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retrying.time, "sleep", lambda _s: None)
    outcomes: list[Exception | int] = [Lost(), Lost(), 7]
    between: list[int] = []

    def attempt() -> int:
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    assert retrying.retry(attempt, retries=5, backoff_s=0.1, retry_on=lambda e: isinstance(e, Lost),
                          between=lambda: between.append(1)) == 7
    assert between == [1, 1]  # after each retried failure, before the next attempt
    with pytest.raises(ValueError):  # not retried: raised at the first attempt
        retrying.retry(lambda: int("x"), retries=5, backoff_s=0.1, retry_on=lambda e: isinstance(e, Lost))

    def superseded() -> None:
        raise RuntimeError("superseded")

    with pytest.raises(RuntimeError, match="superseded"):  # between stops the retries
        retrying.retry(lambda: (_ for _ in ()).throw(Lost()), retries=5, backoff_s=0.1,
                       retry_on=lambda e: isinstance(e, Lost), between=superseded)
