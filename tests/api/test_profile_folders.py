"""A profile's folder: bounded, never a system folder, the kernel's or the home folder
itself, checked as typed and after following links; the API, the profile form and the
first run share the one check."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from bs4 import BeautifulSoup

from tests.web.profiles.test_pages_profiles import valid_form


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder of this test's own (the server runs in this process)."""
    d = tmp_path / "home"
    (d / "src" / "app").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(d))
    return d


def refused_cases(tmp_path: Path) -> list[tuple[str, str]]:
    """(folder as typed, what the refusal says)."""
    to_etc = tmp_path / "to-etc"
    to_etc.symlink_to("/etc")
    to_root = tmp_path / "to-root"
    to_root.symlink_to("/")
    cases = [
        ("/" + "a" * 5000, "at most 4,096"),
        ("/" + "a" * 300, "file name too long"),
        ("/", "/ is a system folder"),
        ("/etc", "/etc is a system folder"),
        ("/etc/", "/etc/ is a system folder"),
        ("/usr/../etc", "(that is /etc) is a system folder"),
        ("/dev", "system folder"),
        ("/usr", "system folder"),
        ("/var", "system folder"),
        ("/tmp", "system folder"),
        ("/proc", "system folder"),
        ("/proc/self", "/proc/self is inside /proc"),
        ("/proc/self/cwd", "inside /proc"),
        ("/sys/kernel", "inside /sys"),
        ("/dev/shm", "/dev/shm is inside /dev"),
        (str(to_etc), f"{to_etc} (that is /etc) is a system folder"),
        (str(to_root), "(that is /) is a system folder"),
        ("~", "is your home folder itself"),
        ("~no-such-user-here/src", "there is no user 'no-such-user-here'"),
    ]
    if Path("/lib64").is_dir():
        cases.append(("/lib64", "system folder"))
    return cases


async def test_the_api_refuses_each_folder_with_its_reason(
    client: httpx.AsyncClient, tmp_path: Path, home: Path
) -> None:
    for folder, reason in [*refused_cases(tmp_path), (str(home), "is your home folder itself")]:
        body = {"name": "p", "backend": "claude", "cwd": folder}
        r = await client.post("/api/profiles", json=body)
        assert r.status_code == 422, (folder[:40], r.status_code, r.text[:300])
        (error,) = r.json()["detail"]
        assert error["field"] == "cwd"
        assert reason in error["message"], (folder[:40], error["message"])
    assert (await client.get("/api/profiles")).json() == []
    # A project folder, in the home folder or reached through a link, is stored resolved.
    link = tmp_path / "to-app"
    link.symlink_to(home / "src" / "app")
    for folder in ("~/src/app", str(link), str(home / "src" / "app") + "/"):
        r = await client.post(
            "/api/profiles", json={"name": "p", "backend": "claude", "cwd": folder}
        )
        assert r.status_code == 201, r.text
        assert r.json()["cwd"] == str((home / "src" / "app").resolve())


async def test_changing_a_folder_is_checked_the_same_way(
    client: httpx.AsyncClient, tmp_path: Path, home: Path
) -> None:
    body = {"name": "p", "backend": "claude", "cwd": str(home / "src" / "app")}
    profile = (await client.post("/api/profiles", json=body)).json()
    for folder, reason in (("/proc/self", "inside /proc"), ("~", "home folder itself")):
        r = await client.patch(f"/api/profiles/{profile['id']}", json={"cwd": folder})
        assert r.status_code == 422 and reason in r.json()["detail"][0]["message"], r.text
    stored = (await client.get(f"/api/profiles/{profile['id']}")).json()
    assert stored["cwd"] == profile["cwd"]


async def test_the_profile_form_shows_the_same_reasons(
    client: httpx.AsyncClient, tmp_path: Path, home: Path
) -> None:
    for folder, reason in refused_cases(tmp_path):
        r = await client.post("/profiles/new", data=valid_form(home, cwd=folder))
        assert r.status_code == 422, (folder[:40], r.status_code)
        error = BeautifulSoup(r.text, "html.parser").select_one("#err-cwd")
        assert error is not None, folder[:40]
        assert reason in " ".join(error.get_text(" ").split()), (folder[:40], error.get_text())
    assert (await client.get("/api/profiles")).json() == []
