/**
 * What an MCP host keeps of one OAuth client between the legs of its flow, as both SDKs' OAuth client providers ask
 * for it: the state it sent, where it sent the person, its PKCE verifier, its tokens and its discovery (which the 2.x
 * client reads back on the callback leg to bind the code to the authorization server it discovered). A test's
 * provider extends it with how the client names itself (its redirect URL, metadata, registration).
 */
import type { OAuthDiscoveryState } from '@modelcontextprotocol/client';
import type { OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';

export abstract class KeptProvider {
  /** The authorization URL the client sent the person to; null until it did. */
  sentTo: URL | null = null;
  saved: OAuthTokens | undefined;
  verifier = '';
  discovered: OAuthDiscoveryState | undefined;
  readonly sentState = `state-${crypto.randomUUID()}`;
  state() {
    return this.sentState;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.sentTo = url;
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
  saveDiscoveryState(state: OAuthDiscoveryState) {
    this.discovered = state;
  }
  discoveryState() {
    return this.discovered;
  }
}
