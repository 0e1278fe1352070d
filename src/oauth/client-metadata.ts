/**
 * Client ID Metadata Documents: an OAuth client names itself by an https URL (its `client_id`) whose JSON document
 * gives its name and redirect URIs. Fetching it is an outbound request chosen by a stranger, so it is fenced: https
 * only, every address of the host checked (no private, loopback, link-local or otherwise internal address), no
 * redirect followed, a time and a size limit; the document must name itself. Documents are cached by their
 * Cache-Control max-age, bounded.
 */
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import type { OAuthConfig, Runtime } from '../core.ts';
import { OAuthError } from './errors.ts';

/** What the consent page shows of a client and what the authorization request is checked against. */
export interface ClientMetadata {
  id: string;
  name: string;
  uri: string | null;
  redirectUris: string[];
}

/** The longest a document is cached, whatever its max-age says, and how many documents are kept. */
const MAX_CACHE_MS = 3600_000;
const MAX_CACHED = 500;
const NAME_MAX_LENGTH = 200;
const UNPRINTABLE = /[\p{Cc}\p{Cf}\u2028\u2029]/u;

/** Addresses a client's document may never be fetched from: internal networks, this host, link-local, multicast. */
const INTERNAL = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 3],
] as const)
  INTERNAL.addSubnet(net, bits, 'ipv4');
// `::/96` also holds the IPv4-compatible form (::127.0.0.1), 6to4 and Teredo wrap an IPv4 address a relay may reach
// inside, fec0::/10 is the old site-local range some networks still route.
for (const [net, bits] of [
  ['::', 96],
  ['64:ff9b::', 96],
  ['100::', 64],
  ['2001::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const)
  INTERNAL.addSubnet(net, bits, 'ipv6');
const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** A URL's host name without an IPv6 literal's brackets. */
const bare = (hostname: string) => hostname.replace(/^\[|\]$/g, '');

const refused = (why: string) => new OAuthError('invalid_client', why);

interface Cached {
  metadata: ClientMetadata;
  until: number;
}

/** One cache per runtime (a serve, a test's core): documents fetched by this process. */
const caches = new WeakMap<Runtime, Map<string, Cached>>();

/**
 * The client's metadata document at `clientId`, fetched safely or from the cache. Throws OAuthError
 * `invalid_client` (not redirectable: the client cannot be trusted) for a URL, an address, an answer or a document
 * that will not do.
 */
export async function clientMetadata(core: Runtime, clientId: string): Promise<ClientMetadata> {
  const cache = caches.get(core) ?? caches.set(core, new Map()).get(core)!;
  const now = core.clock.now();
  const hit = cache.get(clientId);
  if (hit && hit.until > now) return hit.metadata;
  cache.delete(clientId);
  const url = checkClientUrl(clientId, core.config.oauth.loopbackClients);
  const address = await checkedAddress(url, core.config.oauth.loopbackClients);
  const { document, maxAgeMs } = await fetchDocument(url, address, core.config.oauth);
  const metadata = validate(clientId, document);
  if (maxAgeMs > 0) {
    if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!);
    cache.set(clientId, { metadata, until: now + Math.min(maxAgeMs, MAX_CACHE_MS) });
  }
  return metadata;
}

/** `client_id` as a URL a document may be fetched from: https (http only on loopback in tests), a path, no credentials or fragment. */
function checkClientUrl(clientId: string, loopback: boolean): URL {
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    throw refused('client_id must be the https URL of the client’s metadata document.');
  }
  const local = loopback && isLoopbackName(url.hostname);
  if (url.protocol !== 'https:' && !(local && url.protocol === 'http:')) throw refused('client_id must be an https URL.');
  if (url.username || url.password || url.hash || url.pathname === '/' || url.href !== clientId) {
    throw refused('client_id must be an https URL with a path, without credentials or a fragment, in its normal form.');
  }
  return url;
}

const isLoopbackName = (hostname: string) => hostname === 'localhost' || isLoopbackAddress(bare(hostname));

function isLoopbackAddress(address: string): boolean {
  const family = isIP(address);
  return family !== 0 && LOOPBACK.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * Every address the host resolves to must be public (loopback too, in tests): else refused before any connection.
 * The first is the one connected to, so a second resolution cannot swap in another (DNS rebinding).
 */
async function checkedAddress(url: URL, loopback: boolean): Promise<string> {
  const host = bare(url.hostname);
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
  } catch {
    throw refused(`The client's host ${host} does not resolve.`);
  }
  for (const address of addresses) {
    if (loopback && isLoopbackAddress(address)) continue;
    const family = isIP(address) === 4 ? 'ipv4' : 'ipv6';
    if (INTERNAL.check(address, family) || LOOPBACK.check(address, family)) {
      throw refused(`The client's metadata document is on a private, loopback or link-local address (${host}); it must be on the public internet.`);
    }
  }
  if (!addresses[0]) throw refused(`The client's host ${host} does not resolve.`);
  return addresses[0];
}

/**
 * GET the document from `address` (the host's checked address; its name goes in Host and, over TLS, in SNI and the
 * certificate's check): no redirect, `timeoutMs` for the whole answer, at most `maxBytes`; its JSON and cache lifetime.
 */
async function fetchDocument(url: URL, address: string, limits: OAuthConfig): Promise<{ document: unknown; maxAgeMs: number }> {
  const { clientFetchTimeoutMs: timeoutMs, clientMaxBytes: maxBytes } = limits;
  const signal = AbortSignal.timeout(timeoutMs);
  const pinned = new URL(url);
  pinned.hostname = isIP(address) === 6 ? `[${address}]` : address;
  const tls = {
    ...(isIP(bare(url.hostname)) === 0 ? { serverName: url.hostname } : {}),
    ...(limits.clientCa ? { ca: limits.clientCa } : {}),
  };
  try {
    const res = await fetch(pinned, {
      redirect: 'manual',
      signal,
      headers: { Accept: 'application/json', Host: url.host },
      ...(url.protocol === 'https:' ? { tls } : {}),
    });
    if (res.status >= 300 && res.status < 400) throw refused('The client’s metadata document URL redirects; it must answer itself.');
    if (res.status !== 200) throw refused(`The client’s metadata document answered HTTP ${res.status}.`);
    const declared = Number(res.headers.get('content-length'));
    if (declared > maxBytes) throw refused(`The client’s metadata document is larger than ${maxBytes} bytes.`);
    const text = await readUpTo(res, maxBytes);
    if (text === null) throw refused(`The client’s metadata document is larger than ${maxBytes} bytes.`);
    try {
      return { document: JSON.parse(text), maxAgeMs: maxAgeOf(res.headers.get('cache-control')) };
    } catch {
      throw refused('The client’s metadata document is not JSON.');
    }
  } catch (err) {
    if (err instanceof OAuthError) throw err;
    if (signal.aborted) throw refused(`The client’s metadata document did not arrive within ${timeoutMs / 1000} s.`);
    throw refused('The client’s metadata document could not be fetched.');
  }
}

/** The body as text, or null once it passes `max` bytes (the rest is not read). */
async function readUpTo(res: Response, max: number): Promise<string | null> {
  if (!res.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body) {
    size += chunk.byteLength;
    if (size > max) {
      await res.body.cancel().catch(() => {});
      return null;
    }
    chunks.push(chunk);
  }
  return new TextDecoder().decode(Buffer.concat(chunks));
}

/** Cache-Control's max-age in ms; 0 (not cached) when absent or when no-store or no-cache is said. */
function maxAgeOf(header: string | null): number {
  if (!header || /\b(no-store|no-cache)\b/i.test(header)) return 0;
  const m = /\bmax-age\s*=\s*"?(\d+)/i.exec(header);
  return m ? Number(m[1]) * 1000 : 0;
}

/** Schemes a browser runs or reads locally rather than hands to an app: never a redirect URI. */
const UNSAFE_SCHEMES = ['javascript:', 'data:', 'vbscript:', 'file:', 'blob:', 'about:', 'filesystem:'];

/**
 * Whether a code may be sent to `uri` (OAuth 2.1 §2.3.1, RFC 8252 §7): https; http only on a loopback host, where
 * the code never crosses a network; or a native app's own scheme — not one a browser would run or read itself.
 */
function isSafeRedirect(uri: URL): boolean {
  if (uri.protocol === 'http:') return isLoopbackName(uri.hostname);
  return !UNSAFE_SCHEMES.includes(uri.protocol);
}

/** The document as metadata: it names itself, a printable client_name, absolute redirect URIs, public-client auth only. */
function validate(clientId: string, doc: unknown): ClientMetadata {
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) throw refused('The client’s metadata document is not a JSON object.');
  const d = doc as Record<string, unknown>;
  if (d.client_id !== clientId) throw refused('The client’s metadata document names another client_id than its own URL.');
  const name = d.client_name;
  if (typeof name !== 'string' || !name.trim() || name.length > NAME_MAX_LENGTH || UNPRINTABLE.test(name)) {
    throw refused(`The client’s metadata document needs a client_name of 1 to ${NAME_MAX_LENGTH} printable characters.`);
  }
  const uris = d.redirect_uris;
  if (!Array.isArray(uris) || !uris.length || !uris.every((u) => typeof u === 'string' && URL.canParse(u) && !u.includes('#'))) {
    throw refused('The client’s metadata document needs redirect_uris: absolute URLs without a fragment.');
  }
  const unsafe = (uris as string[]).find((u) => !isSafeRedirect(new URL(u)));
  if (unsafe !== undefined) {
    throw refused(
      `The client’s metadata document lists a redirect URI a code may not be sent to (${unsafe.slice(0, 100)}): use https, http on a loopback host, or an app’s own scheme.`,
    );
  }
  const auth = d.token_endpoint_auth_method;
  if (auth !== undefined && auth !== 'none') throw refused('Only public clients are supported: token_endpoint_auth_method must be none.');
  const uri = typeof d.client_uri === 'string' && /^https?:\/\//.test(d.client_uri) ? d.client_uri : null;
  return { id: clientId, name: name.trim(), uri, redirectUris: uris as string[] };
}
