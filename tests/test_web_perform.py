"""`perform` carries each element action out as the one Playwright call of its name (a fake page records them)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from noosphere.envs.web_actions import Effect, WebActionError, parse_action, perform


class FakeLocator:
    def __init__(self, page: FakePage, bid: str) -> None:
        self.page, self.bid = page, bid

    async def count(self) -> int:
        return 1 if self.bid in self.page.bids else 0

    def __getattr__(self, method: str) -> Any:
        async def call(*args: Any, **kwargs: Any) -> None:
            self.page.calls.append((self.bid, method, args, kwargs))

        return call


class FakePage:
    def __init__(self, *bids: str) -> None:
        self.bids = bids
        self.calls: list[tuple[str, str, tuple[Any, ...], dict[str, Any]]] = []

    def locator(self, selector: str) -> FakeLocator:
        return FakeLocator(self, selector.removeprefix('[bid="').removesuffix('"]'))


@pytest.mark.parametrize("name", ["dblclick", "hover", "clear", "check", "uncheck", "focus"])
def test_a_bare_element_action_is_the_locator_method_of_its_name(name: str) -> None:
    page = FakePage("7")
    effect = asyncio.run(perform(page, parse_action(f'{name}("7")'), ("7",)))
    assert effect == Effect()
    assert page.calls == [("7", name, (), {})]


def test_actions_with_arguments_pass_them_on() -> None:
    page = FakePage("3", "4")
    for text in ['click("3")', 'press("3", "Enter")', 'select_option("3", "Lesotho")', 'drag_and_drop("3", "4")']:
        asyncio.run(perform(page, parse_action(text), ("3", "4")))
    assert [(bid, method) for bid, method, _, _ in page.calls] == [
        ("3", "click"), ("3", "press"), ("3", "select_option"), ("3", "drag_to")]
    assert page.calls[1][2] == ("Enter",) and page.calls[2][2] == (["Lesotho"],)


def test_an_element_that_is_not_on_the_page_loses_the_step() -> None:
    page = FakePage()
    with pytest.raises(WebActionError):
        asyncio.run(perform(page, parse_action('hover("9")'), ("9",)))
    assert page.calls == []
