/** The four optional expected-context headers: each names a field of the grant's store it must equal. */
export const EXPECTED_CONTEXT = [
  { key: 'platformKey', header: 'X-Service-Expected-Platform-Key', what: 'platform' },
  { key: 'platformAccountId', header: 'X-Service-Expected-Platform-Account-Id', what: 'platform account' },
  { key: 'shopDomain', header: 'X-Service-Expected-Shop-Domain', what: 'store' },
  { key: 'installationId', header: 'X-Service-Expected-Installation-Id', what: 'installation' },
] as const;

export const EXPECTED_CONTEXT_HEADERS = EXPECTED_CONTEXT.map((c) => c.header);
