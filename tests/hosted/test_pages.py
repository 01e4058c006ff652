"""The public assets as text: the URL is the payload, setup copy is exact, no owner material."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from pdpp_gateway.hosted.pages import ICON_SVG, PageFacts, connect_page, llms_txt
from pdpp_gateway.tools.specs import TOOL_NAMES

MCP = "https://data.example.com/mcp"
PROVIDER = "https://data.example.com"
FORBIDDEN = ("owner token", "pdpp_owner_token", "owner bearer", "profile")


def test_connect_page_leads_with_the_mcp_url_and_exact_setup() -> None:
    page = connect_page(MCP, PROVIDER)
    assert f'<code id="mcp-url">{MCP}</code>' in page
    assert page.index('id="mcp-url"') < page.index("claude mcp add")
    assert f"claude mcp add --transport http pdpp {MCP}" in page
    assert f"codex mcp add pdpp --url {MCP}" in page
    assert f"pdpp-gateway connect {PROVIDER}" in page
    assert f"pdpp-gateway stdio --provider-url {PROVIDER}" in page
    # Claude Desktop by name, with the command that prints its exact entry (absolute paths)
    assert "<h2>Claude Desktop</h2>" in page
    assert f"pdpp-gateway client-config --client claude-desktop --provider-url {PROVIDER}" in page
    assert "https://data.example.com/llms.txt" in page
    assert len(page.encode()) < 8_000
    assert 'data-copy="claude mcp add --transport http pdpp https://data.example.com/mcp"' in page
    assert page.count('class="copy"') >= 6  # the URL and every command
    assert "overflow-x" not in page  # long lines wrap: nothing scrolls sideways on a phone
    assert "pre-wrap" in page


def test_pages_say_only_what_is_true_of_the_deployment() -> None:
    plain = connect_page(MCP, PROVIDER)
    assert "sends you to the provider to sign in" not in plain
    assert "Bearer" not in plain
    assert "no OAuth sign-in" in llms_txt(MCP, PROVIDER)
    demo = PageFacts(sign_in=True, demo_token="sbx_demo_token", cache_root="/tmp/demo cache")
    page = connect_page(MCP, PROVIDER, demo)
    assert "sends you to the provider to sign in" in page
    assert "Authorization: Bearer sbx_demo_token" in page
    assert f"pdpp-gateway connect {PROVIDER} --cache-root /tmp/demo cache" in page
    assert f"pdpp-gateway stdio --provider-url {PROVIDER} --cache-root /tmp/demo cache" in page
    text = llms_txt(MCP, PROVIDER, demo)
    assert "`Authorization: Bearer sbx_demo_token`" in text
    assert "signs the person in on first use" in text
    assert f"`pdpp-gateway stdio --provider-url {PROVIDER} --cache-root /tmp/demo cache`" in text


def test_connect_page_escapes_what_it_interpolates() -> None:
    page = connect_page("https://x.example/<script>alert(1)</script>/mcp", PROVIDER)
    assert "<script>alert" not in page  # the page's own copy-button script is the only script
    assert page.count("<script>") == 1
    assert "&lt;script&gt;" in page


def test_llms_txt_names_endpoint_metadata_and_every_tool() -> None:
    text = llms_txt(MCP, PROVIDER)
    assert text.startswith("# ")
    assert f"MCP server URL: {MCP}" in text
    assert "https://data.example.com/.well-known/oauth-protected-resource/mcp" in text
    for tool in TOOL_NAMES:
        assert f"`{tool}`" in text
    assert text.endswith("\n")
    assert len(text.encode()) < 4_000


@pytest.mark.parametrize("render", [connect_page, llms_txt])
def test_no_owner_credentials_and_no_profiles(render: object) -> None:
    assert callable(render)
    lowered = str(render(MCP, PROVIDER)).lower()
    for phrase in FORBIDDEN:
        assert phrase not in lowered


def test_icon_is_a_small_scalable_svg() -> None:
    root = ET.fromstring(ICON_SVG)  # noqa: S314 - our own constant, not untrusted input
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert root.get("viewBox") == "0 0 64 64"
    assert len(ICON_SVG) < 1_500


@pytest.mark.parametrize(
    "local_url", ["http://127.0.0.1:7664/mcp", "http://localhost:7664/mcp", "http://192.168.1.20/mcp"]
)
def test_a_local_url_is_not_offered_to_cloud_apps(local_url: str) -> None:
    for text in (
        connect_page(local_url, "http://127.0.0.1:7663"),
        llms_txt(local_url, "http://127.0.0.1:7663"),
    ):
        assert "need a public HTTPS URL" in text
        assert "tunnel" in text
        assert "add a custom connector" not in text.lower()
    assert "into an AI app on this machine" in connect_page(local_url, "http://127.0.0.1:7663")
    public = connect_page(MCP, PROVIDER)
    assert "need a public HTTPS URL" not in public
    assert "Add a custom connector" in public


def test_the_demo_names_its_server_as_the_terminal_does() -> None:
    page = connect_page(MCP, PROVIDER, PageFacts(server_name="pdpp-sandbox", demo_token="t"))
    assert f"claude mcp add --transport http pdpp-sandbox {MCP}" in page
    assert "http pdpp " not in page
    assert f"codex mcp add pdpp-sandbox --url {MCP}" in llms_txt(
        MCP, PROVIDER, PageFacts(server_name="pdpp-sandbox")
    )
