// Package oauth is the gateway's OAuth client towards remote MCP servers
// (the specification's authorization chapter, 2025-11-25 and 2026-07-28).
// It is built on the Go SDK's auth and oauthex packages and on
// golang.org/x/oauth2; it adds what a gateway needs around them:
//
//   - ClientCredentials: the headless client_credentials grant (SEP-1046),
//     with a client secret (client_secret_basic or _post) or a private-key
//     JWT assertion (RFC 7523), for a server configured with an "oauth"
//     entry in a sandbox where no person can open a browser.
//   - Stored: a server authorized once by a person (the authorization code
//     flow of Authorize): its token, refreshed before expiry and saved
//     again, from an encrypted Store bound to the server's URL, with the
//     issuer that granted it.
//   - Authorize: the authorization code flow with PKCE, discovery,
//     client ID metadata document / pre-registered client / dynamic
//     registration, driven by the SDK's AuthorizationCodeHandler, with a
//     loopback callback.
//
// Every type here satisfies upstream.Authorizer (the SDK's OAuthHandler
// shape). A token never leaves this package except in the Authorization
// header of a request to the server it was issued for: it is never logged,
// never put in an error, never sent to an agent.
package oauth
