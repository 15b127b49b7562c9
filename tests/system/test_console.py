"""The operator console at /console, over a real server: signing in with a key, the pages,
another tenant's ids (404), CSRF on every form (403), and, in a real browser (Debian's
chromium with chromium-driver), the reviewer's path from a profile to the events and from
a proposal to the next bundle."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from ledger import list_sessions
from ledger.db import connect
from materializers import list_skills, project
from observations.builder import BuildConfig, build_session
from observations.embed import HashEmbedder
from observations.extract.heuristic import HeuristicExtractor
from ops.api.keys import digest
from tests.events import replay, sample_events
from tests.system.live_api import NOW, Server

# a directory to save the pages the browser test visits in (docs/console/ has them)
SCREENSHOTS = os.environ.get("CONSOLE_SCREENSHOTS")


@dataclass(frozen=True)
class Tenant:
    name: str
    key: str
    entry_id: int  # an entry of Maya's
    skill_id: int  # a skill proposal of atlas
    session_id: int


def load_tenant(server: Server, name: str) -> Tenant:
    """The sample transcript built for ``name``: users maya and tom, the agent atlas."""
    config = BuildConfig(extractor=HeuristicExtractor(), embedder=HashEmbedder())
    with connect(server.db_url, autocommit=True) as conn:
        replay(conn, name, sample_events(), now=NOW)
        for s in list_sessions(conn, name):
            build_session(conn, name, s["id"], config, now=NOW)
        project(conn, name, now=NOW)
        skill = list_skills(conn, name, agent_id="atlas")[0]
        session_id = list_sessions(conn, name)[0]["id"]
    entry = server.rows(
        "SELECT id FROM memory_entries WHERE tenant_id = %s AND owner_id = 'maya'"
        " AND kind <> 'episodic' ORDER BY id LIMIT 1",
        name,
    )[0]["id"]
    return Tenant(name, server.key(name), entry, skill.id, session_id)


@pytest.fixture(scope="module")
def tenants(server: Server) -> tuple[Tenant, Tenant]:
    return load_tenant(server, "console-a"), load_tenant(server, "console-b")


def signed_in(server: Server, key: str) -> httpx.Client:
    """A client signed in with ``key``, for the caller to close."""
    client = httpx.Client(base_url=server.url, follow_redirects=False, timeout=30)
    form = client.get("/console/login")
    assert form.status_code == 200
    token = csrf_of(form.text)
    done = client.post("/console/login", data={"csrf": token, "api_key": key})
    assert done.status_code == 303 and done.headers["location"] == "/console/users"
    return client


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, html[:500]
    return found.group(1)


@pytest.fixture
def console(server: Server, tenants: tuple[Tenant, Tenant]) -> Iterator[httpx.Client]:
    client = signed_in(server, tenants[0].key)
    try:
        yield client
    finally:
        client.close()


def test_a_wrong_key_does_not_sign_in_and_pages_need_a_session(server: Server) -> None:
    with httpx.Client(base_url=server.url, follow_redirects=False) as client:
        token = csrf_of(client.get("/console/login").text)
        wrong = client.post("/console/login", data={"csrf": token, "api_key": "ml_nope"})
        assert wrong.status_code == 303 and "error" in wrong.headers["location"]
        assert "memledger_console" not in client.cookies
    page = httpx.get(f"{server.url}/console/users", follow_redirects=False)
    assert page.status_code == 303 and page.headers["location"] == "/console/login"


def test_every_page_shows_the_tenants_memory(
    console: httpx.Client, tenants: tuple[Tenant, Tenant]
) -> None:
    a = tenants[0]
    pages = {
        "/console/users": "maya",
        "/console/users/maya": "Maya Chen",
        "/console/entries?owner=maya&status=active": "Maya Chen",
        f"/console/entries/{a.entry_id}": "Said in these events",
        "/console/skills": "train_search_v2+book_ticket",
        "/console/sessions": "built",
        "/console/runs": "Consolidation runs",
        "/console/config": "MEMLEDGER_SKILL_AUTO_PUBLISH_AFTER",
        "/console/search?q=train+to+porto&user=maya&agent=atlas": "similarity=",
    }
    for path, text in pages.items():
        page = console.get(path)
        assert page.status_code == 200, (path, page.text[:300])
        assert text in page.text, path
    assert "console-b" not in console.get("/console/users").text


def test_another_tenants_ids_answer_404(
    console: httpx.Client, tenants: tuple[Tenant, Tenant]
) -> None:
    b = tenants[1]
    token = csrf_of(console.get("/console/users").text)
    assert console.get(f"/console/entries/{b.entry_id}").status_code == 404
    assert console.get("/console/users/nobody-here").status_code == 404
    refused = [
        console.post(f"/console/entries/{b.entry_id}/edit", data={"csrf": token, "statement": "x"}),
        console.post(f"/console/entries/{b.entry_id}/delete", data={"csrf": token}),
        console.post(
            f"/console/skills/{b.skill_id}/review", data={"csrf": token, "decision": "publish"}
        ),
        console.post(f"/console/sessions/{b.session_id}/retry", data={"csrf": token}),
    ]
    assert [r.status_code for r in refused] == [404, 404, 404, 404]
    assert "<h1>404</h1>" in refused[0].text  # a page, not the API's JSON


def test_every_form_refuses_a_post_without_its_csrf_token(
    server: Server, console: httpx.Client, tenants: tuple[Tenant, Tenant]
) -> None:
    a = tenants[0]
    before = server.rows("SELECT canonical_statement, status FROM memory_entries WHERE id = %s",
                         a.entry_id)  # fmt: skip
    forms = {
        f"/console/entries/{a.entry_id}/edit": {"statement": "Maya Chen hates coffee."},
        f"/console/entries/{a.entry_id}/delete": {},
        f"/console/skills/{a.skill_id}/review": {"decision": "publish"},
        f"/console/sessions/{a.session_id}/retry": {},
        "/console/logout": {},
    }
    for path, data in forms.items():
        for token in (None, "forged"):
            sent = data if token is None else {**data, "csrf": token}
            answer = console.post(path, data=sent)
            assert answer.status_code == 403, (path, token, answer.status_code)
    login = httpx.post(f"{server.url}/console/login", data={"api_key": a.key})
    assert login.status_code == 403
    after = server.rows("SELECT canonical_statement, status FROM memory_entries WHERE id = %s",
                        a.entry_id)  # fmt: skip
    assert after == before
    assert console.get("/console/users").status_code == 200  # still signed in


def test_edit_delete_and_review_from_the_console(
    server: Server, console: httpx.Client, tenants: tuple[Tenant, Tenant]
) -> None:
    a = tenants[0]
    page = console.get(f"/console/entries/{a.entry_id}")
    token = csrf_of(page.text)
    statement = "Maya Chen is allergic to nuts."
    edited = console.post(
        f"/console/entries/{a.entry_id}/edit", data={"csrf": token, "statement": statement}
    )
    assert edited.status_code == 303
    assert "allergic to nuts" in console.get(f"/console/entries/{a.entry_id}").text
    (row,) = server.rows("SELECT actor FROM memory_entry_history WHERE entry_id = %s"
                         " ORDER BY id DESC LIMIT 1", a.entry_id)  # fmt: skip
    assert row["actor"].startswith("console:")
    decision = {"csrf": token, "decision": "reject", "reason": "too narrow"}
    rejected = console.post(f"/console/skills/{a.skill_id}/review", data=decision)
    assert rejected.status_code == 303
    (skill,) = server.rows("SELECT status, review_reason FROM skill_proposal WHERE id = %s",
                           a.skill_id)  # fmt: skip
    assert skill == {"status": "rejected", "review_reason": "too narrow"}


def test_a_revoked_key_ends_its_console_sessions(server: Server, tenants: Any) -> None:
    key = server.key("console-a")
    client = signed_in(server, key)
    try:
        assert client.get("/console/users").status_code == 200
        with connect(server.db_url, autocommit=True) as conn:
            conn.execute(
                "UPDATE api_keys SET revoked_at = %s WHERE key_hash = %s", [NOW, digest(key)]
            )
        page = client.get("/console/users")
        assert page.status_code == 303 and page.headers["location"] == "/console/login"
    finally:
        client.close()


# ------------------------------------------------------------------------------ the browser


def _browser() -> Any:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    if chromium is None or not Path(driver).exists():
        pytest.skip("Debian's chromium and chromium-driver are not installed (make test "
                    "installs them where apt-get can)")  # fmt: skip
    webdriver = pytest.importorskip("selenium.webdriver")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                 "--window-size=1280,900", "--disable-gpu"):  # fmt: skip
        options.add_argument(flag)
    from selenium.webdriver.chrome.service import Service

    return webdriver.Chrome(service=Service(executable_path=driver), options=options)


def test_a_reviewer_in_a_real_browser(server: Server, tenants: tuple[Tenant, Tenant]) -> None:
    """Sign in, open a profile, follow a value's entry to the events it came from, publish
    a skill, and find it in the next bundle."""
    from selenium.webdriver.common.by import By

    browser = _browser()
    key = server.key("console-a")
    shots = Path(SCREENSHOTS) if SCREENSHOTS else None
    try:
        browser.get(f"{server.url}/console/login")
        browser.find_element(By.NAME, "api_key").send_keys(key)
        _follow(browser, browser.find_element(By.CSS_SELECTOR, "button[type=submit]"))
        assert browser.current_url.endswith("/console/users")
        _shot(browser, shots, "users")

        _follow(browser, browser.find_element(By.LINK_TEXT, "maya"))
        assert "Profile of maya" in browser.page_source
        _shot(browser, shots, "profile")
        _follow(browser, browser.find_element(By.CSS_SELECTOR, "a.entry-link"))
        events = browser.find_elements(By.CSS_SELECTOR, "table.provenance tr.event")
        assert events and "maya" in events[0].text.lower()
        _shot(browser, shots, "entry")

        browser.get(f"{server.url}/console/skills?status=proposed")
        section = browser.find_element(By.CSS_SELECTOR, "section.skill")
        goal = section.find_element(By.TAG_NAME, "h2").text
        _shot(browser, shots, "skills")
        _follow(browser, section.find_element(By.CSS_SELECTOR, "button[value=publish]"))
        assert "published" in browser.find_element(By.TAG_NAME, "main").text

        browser.get(f"{server.url}/console/search?q=book+a+train+to+porto&user=maya&agent=atlas")
        bundle = browser.find_element(By.CSS_SELECTOR, "pre.bundle").text
        assert "## Skills" in bundle
        assert goal.split(" ", 1)[1].split(" published")[0][:30] in bundle
        _shot(browser, shots, "search")
    finally:
        browser.quit()


def _follow(browser: Any, element: Any) -> None:
    """Click ``element`` and wait for the next page to replace this one."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.support.wait import WebDriverWait

    page = browser.find_element("tag name", "html")
    element.click()

    def replaced(_: Any) -> bool:
        # the old page's element is stale once the next page is in; Chromium may instead
        # answer that its node "does not belong to the document": gone just the same
        try:
            page.is_enabled()
        except WebDriverException:
            return True
        return False

    WebDriverWait(browser, 20).until(replaced)


def _shot(browser: Any, directory: Path | None, name: str) -> None:
    """Saved for docs/console.md when CONSOLE_SCREENSHOTS names a directory."""
    if directory is not None:
        browser.save_screenshot(str(directory / f"{name}.png"))
