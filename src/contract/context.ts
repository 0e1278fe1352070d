/** The four optional expected-context headers: each names a field of the grant's store it must equal. */
import { AppError } from './errors.ts';

export const EXPECTED_CONTEXT = [
  { key: 'platformKey', header: 'X-Service-Expected-Platform-Key', what: 'platform', caseInsensitive: false },
  { key: 'platformAccountId', header: 'X-Service-Expected-Platform-Account-Id', what: 'platform account', caseInsensitive: false },
  { key: 'shopDomain', header: 'X-Service-Expected-Shop-Domain', what: 'store', caseInsensitive: true },
  { key: 'installationId', header: 'X-Service-Expected-Installation-Id', what: 'installation', caseInsensitive: false },
] as const;

export const EXPECTED_CONTEXT_HEADERS = EXPECTED_CONTEXT.map((c) => c.header);

type StoreContext = { [K in (typeof EXPECTED_CONTEXT)[number]['key']]: string };

/**
 * The one expected-context check, for REST and MCP alike: the first header that differs from the grant's store
 * throws 403 `agent_context_mismatch`. Shop domains compare case-insensitively (DNS names).
 */
export function checkExpectedContext(headers: Headers, store: StoreContext): void {
  for (const { key, header, what, caseInsensitive } of EXPECTED_CONTEXT) {
    const expected = headers.get(header);
    if (expected === null) continue;
    const actual = store[key];
    const same = caseInsensitive ? expected.trim().toLowerCase() === actual.toLowerCase() : expected === actual;
    if (!same) {
      throw new AppError('agent_context_mismatch', `The grant belongs to a different ${what} than ${header} expects.`, {
        header: header.toLowerCase(),
      });
    }
  }
}
