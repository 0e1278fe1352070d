/** The OAuth error of the authorization server (RFC 6749 §4.1.2.1, §5.2): its code, words and where it is shown. */

/**
 * An OAuth refusal. `error` is RFC 6749's code (`invalid_request`, `invalid_client`, `invalid_grant`, …) and
 * `description` its words (never a secret). `redirectable`: the client and its redirect URI are trusted, so the
 * refusal goes back to the client as `?error=…`; false when they are not (an error page, never a redirect).
 */
export class OAuthError extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
    readonly redirectable = false,
    readonly status = 400,
  ) {
    super(description);
    this.name = 'OAuthError';
  }
}
