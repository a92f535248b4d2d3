"""The console's pages in a real browser: Debian's Chromium (/usr/bin/chromium, the Makefile's `browser` target
installs it) driven by Playwright, against a live cluster on the test's event loop.

The storage test takes the screenshot README shows, docs/console-storage.png: it writes it there when the file is
missing or POCKETMQ_UPDATE_SCREENSHOT=1 (its ids and times differ every run, so a plain run leaves the docs alone).
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiohttp", reason="the console extra")
playwright_api = pytest.importorskip("playwright.async_api", reason="playwright (the dev extra)")

from pocketmq.client import ConsumeConcurrentlyStatus, PushConsumer  # noqa: E402
from pocketmq.client.consumer.pull_consumer import PullConsumer  # noqa: E402
from pocketmq.client.message import Message  # noqa: E402
from pocketmq.client.producer.producer import Producer  # noqa: E402
from pocketmq.console import ConsoleServer  # noqa: E402

CHROMIUM = os.environ.get("POCKETMQ_CHROMIUM", "/usr/bin/chromium")
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "console-storage.png"
TIMEOUT_MS = 15_000

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no Chromium at {CHROMIUM} (make browser)")


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    async with playwright_api.async_playwright() as pw:
        b = await pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            yield b
        finally:
            await b.close()


@pytest.fixture
async def page(browser: Any) -> AsyncIterator[Any]:
    context = await browser.new_context(viewport={"width": 1280, "height": 1000})
    p = await context.new_page()
    p.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    p.on("pageerror", lambda e: errors.append(str(e)))
    yield p
    await context.close()
    assert errors == []  # no script error on any page


async def open_page(page: Any, console: ConsoleServer, name: str) -> None:
    await page.goto(f"{console.url}#{name}")
    await page.wait_for_selector(f"body[data-loaded='{name}']")
    assert await page.locator("#error").is_hidden(), await page.locator("#error").text_content()


async def send(cluster: Any, topic: str, n: int, **kw: Any) -> list[Any]:
    async with Producer("BrowserPG", cluster.namesrv_addr) as p:
        results = [await p.send(Message(topic, f"body-{i}".encode(), **kw)) for i in range(n)]
    assert await cluster.wait_dispatched()
    assert await cluster.wait_routed(topic)
    return results


async def consume_all(_msgs: list[Any], _context: Any) -> ConsumeConcurrentlyStatus:
    return ConsumeConcurrentlyStatus.CONSUME_SUCCESS


async def test_each_page_loads_against_a_live_cluster(cluster, console, page, poll):
    await send(cluster, "PagesT", 6, keys="k")
    async with PullConsumer("PagesGroup", cluster.namesrv_addr) as c:
        mq = sorted(await c.fetch_subscribe_message_queues("PagesT"), key=lambda q: q.queue_id)[0]
        await c.update_consume_offset(mq, 0)  # the group has offsets: lag = everything stored

    await open_page(page, console, "cluster")
    brokers = await page.locator("#brokers").text_content()
    assert "broker-a" in brokers and cluster.broker_addr in brokers and "DefaultCluster" in brokers

    await open_page(page, console, "topics")
    await page.locator("#topics td", has_text="PagesT").click()
    await page.wait_for_selector("#topic-queues td")
    queues = await page.locator("#topic-queues").text_content()
    assert "broker-a" in queues
    rows = await page.locator("#topic-queues tr").count()
    assert rows == 1 + 4  # header + the topic's 4 queues

    # A push consumer's group shows its rebalance history: the round that gave it the topic's four queues.
    push = PushConsumer("PagesPushGroup", cluster.namesrv_addr, rebalance_interval=0.2,
                        heartbeat_broker_interval=0.1)
    push.subscribe("PagesT", "*")
    push.register_message_listener(consume_all)
    await push.start()
    try:
        await poll(lambda: len([q for q in push.assigned_queues() if q.topic == "PagesT"]) == 4, timeout=20)
        await open_page(page, console, "groups")
        await page.locator("#groups td", has_text="PagesGroup").first.click()
        await page.wait_for_selector("#group-lag")
        lag = int(await page.locator("#group-lag").text_content())
        assert 0 < lag <= 6

        await page.locator("#groups td", has_text="PagesPushGroup").click()
        await page.wait_for_selector("#group-rebalances td")
        rows = page.locator("#group-rebalances tr", has_text="PagesT")
        assert await rows.count() == 1
        row = await rows.first.text_content()
        assert push.client_id in row and "AVG" in row and "broker-a:0, broker-a:1, broker-a:2, broker-a:3" in row
        assert "A rebalance is" in await page.locator("#group-detail").text_content()
    finally:
        await push.shutdown()

    await open_page(page, console, "messages")
    await open_page(page, console, "storage")
    assert await page.locator(".clrec").count() == 6  # the commit log's records
    assert await page.locator(".cqe").count() == 6  # and the consume-queue entries pointing at them


async def test_the_search_finds_a_message_just_sent(cluster, console, page):
    await send(cluster, "SearchT", 3, keys="other")
    (sent,) = await send(cluster, "SearchT", 1, keys="needle-42")
    await open_page(page, console, "messages")
    await page.select_option("#search select[name=by]", "key")
    await page.fill("#search input[name=topic]", "SearchT")
    await page.fill("#search input[name=value]", "needle-42")
    await page.click("#search button")
    row = page.locator("#results tr.clickable")
    await row.first.wait_for()
    assert await row.count() == 1
    assert sent.msg_id in await row.first.text_content()

    # One message: its properties and its body as text and hex.
    await row.first.click()
    await page.wait_for_selector("#body")
    assert await page.locator("#body").text_content() == "body-0"
    await page.select_option("#body-as", "hex")
    assert await page.locator("#body").text_content() == " ".join(f"{b:02x}" for b in b"body-0")
    assert "needle-42" in await page.locator("#message-detail").text_content()

    # By unique id, and by topic and time.
    await page.select_option("#search select[name=by]", "msgId")
    await page.fill("#search input[name=value]", sent.msg_id)
    await page.click("#search button")
    await page.wait_for_function("document.querySelectorAll('#results tr.clickable').length === 1")
    await page.select_option("#search select[name=by]", "time")
    await page.click("#search button")
    await page.wait_for_function("document.querySelectorAll('#results tr.clickable').length === 4")


async def test_the_storage_page_shows_a_record_field_by_field_and_the_entries_pointing_at_it(cluster, console, page,
                                                                                            tmp_path):
    await send(cluster, "TopicTest", 3, keys="warm-up", tags="TagB")
    await open_page(page, console, "storage")
    await page.fill("#send input[name=keys]", "order-7")
    await page.fill("#send input[name=body]", json.dumps({"order": 7, "amount": 12.5}))
    await page.click("#send button")
    # The page's own narration: sent, appended, dispatched, indexed (by the UNIQ_KEY and by the key).
    await page.wait_for_function("[...document.querySelectorAll('#steps li')].some(li => li.textContent"
                                 ".startsWith('Indexed: key TopicTest#order-7'))")
    steps = await page.locator("#steps").text_content()
    assert "Appended: a" in steps and "Dispatched: entry" in steps
    sent_offset = int(await page.locator(".clrec.new").get_attribute("data-offset"))

    fields = await page.locator("#record-fields").text_content()
    for name in ("TOTALSIZE", "MAGICCODE", "BODYCRC", "QUEUEOFFSET", "PHYSICALOFFSET", "BORNHOST", "BODY",
                 "TOPIC", "PROPERTIES", "KEYS"):
        assert name in fields
    assert "0xDAA320A7 = MESSAGE_MAGIC_CODE" in fields
    assert f"{sent_offset} (where this record starts in the commit log)" in fields
    cq = await page.locator("#cq-entry").text_content()
    assert f"CommitLogOffset {sent_offset}," in cq
    index = await page.locator(".index-key", has_text="TopicTest#order-7").text_content()
    assert "points at this record" in index
    shot = await page.screenshot(path=str(tmp_path / "storage.png"), full_page=True)
    assert shot.startswith(b"\x89PNG") and len(shot) > 50_000
    if os.environ.get("POCKETMQ_UPDATE_SCREENSHOT") == "1" or not SCREENSHOT.exists():
        SCREENSHOT.write_bytes(shot)

    # Clicking another record shows that one; so does clicking a consume-queue entry (the record it points at).
    first = page.locator(".clrec").first
    offset = int(await first.get_attribute("data-offset"))
    await first.click()
    await page.wait_for_function(f"document.querySelector('#record h2').textContent.endsWith(' {offset}')")
    assert f"CommitLogOffset {offset}," in await page.locator("#cq-entry").text_content()
    entry = page.locator(".cqe").last
    offset = int(await entry.get_attribute("data-offset"))
    await entry.click()
    await page.wait_for_function(f"document.querySelector('#record h2').textContent.endsWith(' {offset}')")
    assert "index/" in await page.locator("#files").text_content()  # the index files' headers


async def test_a_body_json_cannot_carry_opens_as_text_and_a_failed_detail_says_so(cluster, console, page):
    async with Producer("BrowserPG", cluster.namesrv_addr) as p:
        await p.send(Message("NanT", b'{"price": NaN}'))
    assert await cluster.wait_dispatched() and await cluster.wait_routed("NanT")
    await open_page(page, console, "messages")
    await page.fill("#search input[name=topic]", "NanT")
    await page.click("#search button")
    row = page.locator("#results tr.clickable").first
    await row.click()
    await page.wait_for_selector("#body")
    assert await page.locator("#body").text_content() == '{"price": NaN}'
    assert await page.locator("#body-as option[value=json]").is_disabled()  # Python's JSON, not the browser's

    # A detail whose answer is no JSON (a proxy's error page): the click shows why instead of doing nothing.
    await page.route("**/api/message?*", lambda r: r.fulfill(status=502, body="<html>Bad Gateway</html>"))
    await row.click()
    await page.locator("#error").wait_for()
    assert "HTTP 502" in await page.locator("#error").text_content()


async def test_an_admin_action_works_and_a_read_only_console_refuses_it(cluster, console, page):
    await open_page(page, console, "topics")
    await page.fill("#create-topic input[name=topic]", "MadeInTheBrowser")
    await page.click("#create-topic button")
    await page.locator("#topics td", has_text="MadeInTheBrowser").wait_for()
    route = await console.admin.examine_topic_route_info("MadeInTheBrowser")
    assert route.queue_datas[0].write_queue_nums == 4

    async with ConsoleServer(cluster.namesrv_addr, port=0) as read_only:
        await open_page(page, read_only, "topics")
        assert await page.locator("#create-topic").is_hidden()  # no admin form to use
        assert "read-only" in await page.locator("#mode").text_content()
        # Asked anyway (a hand-made request from the page), the server refuses and nothing is created.
        answer = await page.evaluate("""async () => {
            const r = await fetch('/api/topic', {method: 'POST', headers: {'Content-Type': 'application/json'},
                                                 body: JSON.stringify({topic: 'NotAllowed'})});
            return [r.status, (await r.json()).error];
        }""")
        assert answer[0] == 403 and "read-only" in answer[1]
        assert "NotAllowed" not in await console.admin.fetch_all_topic_list()
        assert await page.locator("#nav-storage").is_hidden()  # no store given: no storage page


async def test_metrics_page_parses_in_the_browser_session(cluster, console, page):
    """/metrics as a browser (or Prometheus) fetches it: text format, parsed by prometheus_client."""
    from prometheus_client.parser import text_string_to_metric_families

    await send(cluster, "BrowserMetricsT", 2)
    response = await page.goto(console.url + "metrics")
    text = await response.text()
    names = {f.name for f in text_string_to_metric_families(text)}
    assert {"rocketmq_messages_in", "rocketmq_throughput_in", "rocketmq_message_size",
            "rocketmq_consumer_lag_messages", "rocketmq_storage_dispatch_behind_bytes"} <= names
    assert 'topic="BrowserMetricsT"' in text
