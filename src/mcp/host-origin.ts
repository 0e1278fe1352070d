/**
 * Which Host and Origin the MCP endpoint answers: the MCP transport's advice against DNS rebinding, where a page on
 * a name an attacker controls is made to resolve to this server. Such a request carries the attacker's name in
 * Host and its page in Origin; an IP address or a loopback name can be neither.
 *
 * - Host, when sent: the public URL's host name, a loopback name (`localhost`), an IP address (the one serve
 *   listens on, loopback or not) or one of HOOKRELAY_MCP_ALLOWED_HOSTS. The port is not compared: a proxy may change
 *   it. A proxy in front of serve passes the client's Host on, sends the address it reaches serve at, or sends a
 *   name the operator allowed (a container service name).
 * - Origin, when sent (browsers send it; other clients need not): the public URL's origin, one of
 *   HOOKRELAY_MCP_ALLOWED_ORIGINS, the origin the request itself reached (its Host: a page this server served), or
 *   any loopback origin while the public URL is a loopback one (a box used from its own machine).
 *
 * A request without Host (in process) or without Origin (a non-browser client) passes that check.
 */
import { refuse, type AppError } from '../contract/errors.ts';

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]']);
const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;

/** The host of `http://<value>` (`name[:port]`, port omitted when default), or null when `value` is no host. */
function parseHost(value: string): URL | null {
  if (!value || /[/?#@\s\\]/.test(value)) return null;
  try {
    return new URL(`http://${value}`);
  } catch {
    return null;
  }
}

const isAddress = (hostname: string) => IPV4.test(hostname) || hostname.startsWith('[');
const isLoopback = (hostname: string) => LOOPBACK_NAMES.has(hostname) || (IPV4.test(hostname) && hostname.startsWith('127.'));

/** Why the request may not reach the MCP endpoint (403 `action_refused`, category safety), or null when it may. */
export function hostOriginRefusal(headers: Headers, publicUrl: string, allowed: { origins: readonly string[]; hosts: readonly string[] }): AppError | null {
  const own = new URL(publicUrl);
  const hostHeader = headers.get('host');
  const host = hostHeader === null ? null : parseHost(hostHeader);
  if (
    hostHeader !== null &&
    (!host || !(host.hostname === own.hostname || isLoopback(host.hostname) || isAddress(host.hostname) || allowed.hosts.includes(host.hostname)))
  ) {
    return refuse({
      category: 'safety',
      code: 'host_not_allowed',
      reason: `The MCP endpoint answers requests addressed to ${own.hostname}, a loopback name or an IP address, not to ${hostHeader}.`,
      recommendedAction:
        'Connect through the public URL. Operators: set HOOKRELAY_PUBLIC_URL to the name clients use, and have a proxy pass the Host header on (nginx: proxy_set_header Host $host), send the address serve listens on, or list the name it sends in HOOKRELAY_MCP_ALLOWED_HOSTS.',
    });
  }
  const origin = headers.get('origin');
  if (origin === null || originAllowed(origin, own, host, allowed.origins)) return null;
  return refuse({
    category: 'safety',
    code: 'origin_not_allowed',
    reason: `Requests from the browser origin ${origin} are not allowed on the MCP endpoint.`,
    recommendedAction: 'Connect from a non-browser MCP client, or ask the operator to add this origin to HOOKRELAY_MCP_ALLOWED_ORIGINS.',
  });
}

function originAllowed(origin: string, own: URL, host: URL | null, allowed: readonly string[]): boolean {
  if (origin === own.origin || allowed.includes(origin)) return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false; // `null` (a sandboxed or file page) among them
  }
  if (url.origin !== origin.replace(/\/$/, '')) return false; // an origin is scheme, host and port only
  if (host && url.host === host.host) return true;
  return isLoopback(own.hostname) && isLoopback(url.hostname);
}
