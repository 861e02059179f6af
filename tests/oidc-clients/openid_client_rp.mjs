// A relying party built on openid-client (from npm, unmodified), driven by
// tests/e2e/oidc_clients.rs: the same protocol as authlib_rp.py, from another ecosystem.
//
// openid-client (on oauth4webapi) does discovery, builds the authorization URL, checks the
// authorization response (state, and `iss` per RFC 9207 since the provider advertises it),
// exchanges the code, validates the ID token (ES256 against the JWKS, iss, aud, exp, iat,
// nonce), fetches userinfo (checking `sub`), refreshes, introspects and revokes.
//
// stdin/stdout, one JSON object per line:
//   out: {"authorization_url": ..., "nonce": ...}
//   in:  the callback URL the browser landed on
//   out: {"id_token": {...}, "userinfo": {...}, ...} or {"error": ...}

import * as client from 'openid-client';
import { createInterface } from 'node:readline';

const [issuer, clientId, clientSecret, redirectUri, authMethod, phone, scope] = process.argv.slice(2);
const emit = (value) => process.stdout.write(`${JSON.stringify(value)}\n`);

const lines = createInterface({ input: process.stdin });
const nextLine = () => new Promise((resolve) => lines.once('line', resolve));

async function main() {
  const auth = authMethod === 'client_secret_post'
    ? client.ClientSecretPost(clientSecret)
    : client.ClientSecretBasic(clientSecret);
  // The test server speaks plain HTTP on loopback; a deployment would not need this.
  const config = await client.discovery(
    new URL(issuer),
    clientId,
    { id_token_signed_response_alg: 'ES256' },
    auth,
    { execute: [client.allowInsecureRequests] },
  );
  const verifier = client.randomPKCECodeVerifier();
  const nonce = client.randomNonce();
  const state = client.randomState();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope,
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    nonce,
    state,
    login_hint: phone,
  });
  emit({ authorization_url: url.href, nonce });

  const callback = await nextLine();
  const tokens = await client.authorizationCodeGrant(config, new URL(callback), {
    pkceCodeVerifier: verifier,
    expectedNonce: nonce,
    expectedState: state,
    idTokenExpected: true,
  });
  const claims = tokens.claims();
  const userinfo = await client.fetchUserInfo(config, tokens.access_token, claims.sub);

  const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token);
  const userinfoAfterRefresh = await client.fetchUserInfo(config, refreshed.access_token, claims.sub);
  const replayErrors = [];
  for (const presented of [tokens.refresh_token, refreshed.refresh_token]) {
    try {
      await client.refreshTokenGrant(config, presented);
      replayErrors.push(null);
    } catch (error) {
      replayErrors.push(error.error ?? error.code ?? String(error));
    }
  }
  const introspection = await client.tokenIntrospection(config, refreshed.access_token);
  await client.tokenRevocation(config, refreshed.access_token);
  const after = await client.tokenIntrospection(config, refreshed.access_token);
  let userinfoAfter = 200;
  try {
    await client.fetchUserInfo(config, refreshed.access_token, claims.sub);
  } catch (error) {
    userinfoAfter = error.status ?? error.response?.status ?? `unreadable: ${error}`;
  }
  emit({
    id_token: claims,
    userinfo,
    token: { token_type: tokens.token_type, scope: tokens.scope, expires_in: tokens.expires_in },
    refresh_rotated: refreshed.refresh_token !== tokens.refresh_token,
    userinfo_after_refresh: userinfoAfterRefresh,
    refresh_replay_errors: replayErrors,
    introspection,
    introspection_after_revoke: after,
    userinfo_after_revoke_status: userinfoAfter,
  });
}

main()
  .then(() => process.exit(0))
  .catch((error) => {
    emit({ error: `${error.name}: ${error.message} ${error.error ?? ''} ${error.error_description ?? ''}` });
    process.exit(1);
  });
