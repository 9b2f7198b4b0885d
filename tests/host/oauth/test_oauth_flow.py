"""The whole flow with the MCP SDK's own OAuth client: discovery, DCR, consent by pairing code, tokens, tools."""

from __future__ import annotations

import time

from oauth_support import MemoryTokens, echo_through, initialize_with, sdk_oauth

from bridge.host.oauth import list_clients


async def test_sdk_client_registers_gets_consent_and_calls_a_tool(serve, owner) -> None:
    served = serve()
    storage = MemoryTokens()

    tools = await echo_through(served, sdk_oauth(served, owner, storage))

    assert tools == ["echo"]
    assert owner.authorizations == 1
    assert storage.tokens is not None and storage.tokens.refresh_token
    (client,) = list_clients(served.state_dir)
    assert client.kind == "dcr" and client.client_name == "SDK test client"
    assert client.last_used_at is not None


async def test_request_without_token_is_401_pointing_at_resource_metadata(serve) -> None:
    served = serve()

    response = initialize_with(served, None)

    assert response.status_code == 401
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    assert f'resource_metadata="{served.base_url}/.well-known/oauth-protected-resource/mcp"' in challenge


async def test_sdk_client_refreshes_an_expired_token_without_a_new_consent(serve, owner) -> None:
    served = serve()
    storage = MemoryTokens()
    oauth = sdk_oauth(served, owner, storage)
    await echo_through(served, oauth)
    first = storage.tokens
    assert first is not None
    # By the SDK client's own clock the access token has expired: its next request starts with a refresh.
    oauth.context.token_expiry_time = time.time() - 1

    assert await echo_through(served, oauth) == ["echo"]

    assert owner.authorizations == 1
    assert storage.tokens.refresh_token != first.refresh_token
    assert initialize_with(served, first.access_token).status_code == 401
    assert initialize_with(served, storage.tokens.access_token).status_code == 200


async def test_sdk_client_asking_for_a_client_secret_still_connects(serve, owner) -> None:
    served = serve()
    storage = MemoryTokens()

    await echo_through(served, sdk_oauth(served, owner, storage, token_endpoint_auth_method=None))

    assert storage.client_info.token_endpoint_auth_method == "none"
    assert storage.client_info.client_secret is None
