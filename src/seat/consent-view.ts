/**
 * What a person sees of an agent's connection request (issue 38), the same on the consent page (/oauth/authorize)
 * and on the Agents page's "Approve a connection": who asks (the client as its own metadata document names it,
 * marked unverified: nothing vouches for it), what it asked for in words, what it will reach, and the choices the
 * person makes — a tier no higher than asked (src/oauth/authorization.ts `offeredTiers`), a lifetime, a label.
 */
import { AppError, ERROR_CODES } from '../contract/errors.ts';
import { TIER_LABELS, TIER_NAMES, TIERS, type Scope, type Tier } from '../contract/scopes.ts';
import { type AuthorizationRequest, OAuthError } from '../oauth/authorization.ts';
import { LABEL_MAX_LENGTH } from '../ops/grants.ts';
import { html, type Html } from './html.ts';

/** Each scope in words, for a person deciding whether to grant it. */
const SCOPE_WORDS: Record<Scope, string> = {
  'setup:read': 'read how hookrelay is set up (endpoints, plan, store state)',
  'event:read': 'read the events received and how their handoff went',
  'endpoint:write': 'create and change endpoints',
  'endpoint:delete': 'delete endpoints',
  'secret:rotate': 'rotate endpoint signing secrets',
  'endpoint:test': 'send test events to endpoints',
  'replay:execute': 'replay events to Shopify Flow',
  'diagnostics:create': 'create diagnostic shares',
  'support:request': 'open support requests',
  'expansion:request': 'ask for a plan upgrade',
};

/** The lifetime a consent offers unless the person changes it (at most 90d, the grants' limit). */
export const CONSENT_DEFAULT_TTL = '30d';

/** The tiers a person may choose, lowest first (the order of the contract's tiers). */
const offered = (ar: AuthorizationRequest): Tier[] => TIER_NAMES.filter((t) => ar.offeredTiers.includes(t));

/** Where the resource is, in words: the MCP server or the Agent Operations API. */
const resourceWords = (resource: string) => (/\/mcp$/.test(resource) ? 'the MCP server' : 'the Agent Operations API');

/** Who asks and for what: the client (unverified), its scopes in words, the resource, where the browser goes next. */
export function requestFacts(ar: AuthorizationRequest): Html {
  const back = redirectShown(ar.redirectUri);
  return html`<dl class="consent-facts">
<dt>Client</dt><dd><strong>${ar.client.name}</strong> <span class="badge warn">unverified</span>${
    ar.client.uri ? html`<br><span class="muted">Says it is from</span> <code>${ar.client.uri}</code>` : ''
  }<br><span class="muted">Client id</span> <code>${ar.client.id}</code><br><span class="muted">hookrelay has not checked who runs this client: the name and address are what the client says of itself. Approve only a connection you started.</span></dd>
<dt>Asks to</dt><dd><ul>${ar.requestedScopes.map((s) => html`<li>${SCOPE_WORDS[s] ?? s} <code>${s}</code></li>`)}</ul></dd>
<dt>Reaches</dt><dd>${resourceWords(ar.resource)} of this store: <code>${ar.resource}</code></dd>
<dt>Then returns to</dt><dd><code>${back}</code></dd>
</dl>`;
}

/** The redirect URI as a person checks it: its origin (or scheme) and path, never its query. */
function redirectShown(uri: string): string {
  try {
    const u = new URL(uri);
    return u.protocol === 'http:' || u.protocol === 'https:' ? `${u.origin}${u.pathname}` : `${u.protocol}${u.host}${u.pathname}`;
  } catch {
    return uri;
  }
}

/** The person's choices as a form sends them back (and as a refused form shows them again). */
export interface ConsentChoice {
  tier: string;
  ttl: string;
  label: string;
}

/** The choices' defaults: the lowest tier offered, 30 days, the client's name as the label (cut to a label's length). */
export const defaultChoice = (ar: AuthorizationRequest): ConsentChoice => ({
  tier: offered(ar)[0] ?? 'observer',
  ttl: CONSENT_DEFAULT_TTL,
  label: ar.client.name.slice(0, LABEL_MAX_LENGTH).trim(),
});

/** A form's choices (missing fields read as empty: the issuing function refuses them plainly). */
export const choiceOf = (form: URLSearchParams | null): ConsentChoice => ({
  tier: form?.get('tier')?.trim() ?? '',
  ttl: form?.get('ttl')?.trim() ?? '',
  label: form?.get('label')?.trim() ?? '',
});

/**
 * The form fields of a decision: the tier (radios, only those offered; what each grants of what was asked), the
 * lifetime and the label. The caller puts them in its form with its hidden fields and the Approve/Deny buttons.
 */
export function choiceFields(ar: AuthorizationRequest, chosen: ConsentChoice): Html {
  return html`<fieldset><legend>Tier: what the agent may do</legend>${offered(ar).map((t) => {
    const grants = TIERS[t].filter((s) => ar.requestedScopes.includes(s));
    return html`<p><input type="radio" id="c-${t}" name="tier" value="${t}"${t === chosen.tier ? html` checked` : ''}> <label for="c-${t}">${TIER_LABELS[t]}</label><br><span class="muted">Grants: ${grants.length ? grants.join(', ') : 'nothing it asked for'}</span></p>`;
  })}</fieldset><p><label for="c-ttl">Lifetime (e.g. 8h, 7d; at most 90d)</label><br><input id="c-ttl" name="ttl" value="${chosen.ttl}" required></p><p><label for="c-label">Label: how this grant is listed on the Agents page</label><br><input id="c-label" name="label" maxlength="${LABEL_MAX_LENGTH}" value="${chosen.label}"></p>`;
}

/** Approve and Deny: one form, the button pressed names the decision. */
export const decisionButtons = html`<p><button type="submit" class="primary" name="decision" value="approve">Approve</button> <button type="submit" class="danger" name="decision" value="deny">Deny</button></p>`;

/** A decision refused as the person should read it: its code, message and status; null for a fault of ours. */
export function refusalOf(err: unknown): { code: string; message: string; status: number } | null {
  if (err instanceof OAuthError) return { code: err.error, message: err.description, status: err.status };
  if (err instanceof AppError && err.code !== 'internal_error') return { code: err.code, message: err.message, status: ERROR_CODES[err.code].status };
  return null;
}

/** A refused decision, said at the top of the form shown again. */
export const notDone = (code: string, message: string) =>
  html`<div role="alert" class="notice bad"><p><strong>Not done</strong> (${code}): ${message}</p></div>`;
