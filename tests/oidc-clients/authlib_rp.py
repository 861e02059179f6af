#!/usr/bin/env python3
"""A relying party built on Authlib (from PyPI, unmodified), driven by tests/e2e/oidc_clients.rs.

It plays the merchant's web application: discovery, the authorization URL (PKCE S256, state,
nonce, login_hint), then — once the test, playing the browser and the app, hands back the URL
the browser landed on — the code exchange with the chosen client authentication, ID token
validation by Authlib against the provider's JWKS, userinfo, introspection and revocation.

Protocol on stdin/stdout, one JSON object per line:
  out: {"authorization_url": ...}
  in:  the callback URL the browser was redirected to
  out: {"id_token": {...claims...}, "userinfo": {...}, "token": {...}, ...} or {"error": ...}
"""

import json
import sys
from urllib.parse import parse_qs, urlparse

import requests
from authlib.common.security import generate_token
from authlib.integrations.requests_client import OAuth2Session
from authlib.jose import JsonWebKey, jwt
from authlib.oidc.core import CodeIDToken


def emit(value):
    print(json.dumps(value), flush=True)


def main():
    issuer, client_id, client_secret, redirect_uri, auth_method, phone, scope = sys.argv[1:8]
    metadata = requests.get(f"{issuer}/.well-known/openid-configuration", timeout=10).json()
    if metadata["issuer"] != issuer:
        emit({"error": "issuer mismatch", "metadata": metadata})
        return 1

    session = OAuth2Session(
        client_id,
        client_secret,
        scope=scope,
        redirect_uri=redirect_uri,
        code_challenge_method="S256",
        token_endpoint_auth_method=auth_method,
        # Authlib would otherwise use client_secret_basic there, which a post client did not
        # register (refused, like any other method it did not register).
        revocation_endpoint_auth_method=auth_method,
    )
    verifier = generate_token(64)
    nonce = generate_token(24)
    url, state = session.create_authorization_url(
        metadata["authorization_endpoint"],
        code_verifier=verifier,
        nonce=nonce,
        login_hint=phone,
    )
    emit({"authorization_url": url, "state": state, "nonce": nonce})

    callback = sys.stdin.readline().strip()
    query = parse_qs(urlparse(callback).query)
    # RFC 9207: the authorization response names its issuer.
    if query.get("iss") != [metadata["issuer"]]:
        emit({"error": "iss missing or wrong in the authorization response", "query": query})
        return 1
    try:
        token = session.fetch_token(
            metadata["token_endpoint"],
            authorization_response=callback,
            state=state,
            code_verifier=verifier,
        )
    except Exception as error:  # the test reads what the library said
        emit({"error": f"token: {error}"})
        return 1

    keys = JsonWebKey.import_key_set(requests.get(metadata["jwks_uri"], timeout=10).json())
    claims = jwt.decode(
        token["id_token"],
        keys,
        claims_cls=CodeIDToken,
        claims_options={"iss": {"essential": True, "value": metadata["issuer"]}},
        claims_params={"nonce": nonce, "client_id": client_id, "access_token": token["access_token"]},
    )
    # Authlib checks iss, aud, exp, iat, nonce and at_hash here; it raises on any mismatch.
    claims.validate()

    userinfo = session.get(metadata["userinfo_endpoint"]).json()

    # Refresh: a new access token and a new refresh token; the old refresh token is spent, and
    # presenting it again ends the whole family (the new one too).
    first_refresh = token["refresh_token"]
    refreshed = session.refresh_token(metadata["token_endpoint"], refresh_token=first_refresh)
    rotated = refreshed["refresh_token"] != first_refresh
    userinfo_refreshed = session.get(metadata["userinfo_endpoint"]).json()
    replay_errors = []
    for presented in (first_refresh, refreshed["refresh_token"]):
        try:
            session.refresh_token(metadata["token_endpoint"], refresh_token=presented)
            replay_errors.append(None)
        except Exception as error:  # Authlib raises OAuthError with the RFC's code
            replay_errors.append(getattr(error, "error", str(error)))
    session.token = refreshed
    token["access_token"] = refreshed["access_token"]

    active = session.introspect_token(
        metadata["introspection_endpoint"], token=token["access_token"]
    ).json()
    session.revoke_token(metadata["revocation_endpoint"], token=token["access_token"])
    after = session.introspect_token(
        metadata["introspection_endpoint"], token=token["access_token"]
    ).json()
    userinfo_after = session.get(metadata["userinfo_endpoint"])
    emit(
        {
            "id_token": dict(claims),
            "userinfo": userinfo,
            "token": {
                k: v for k, v in token.items()
                if k not in ("access_token", "id_token", "refresh_token")
            },
            "refresh_rotated": rotated,
            "userinfo_after_refresh": userinfo_refreshed,
            "refresh_replay_errors": replay_errors,
            "introspection": active,
            "introspection_after_revoke": after,
            "userinfo_after_revoke_status": userinfo_after.status_code,
        }
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
