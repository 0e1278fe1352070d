/**
 * The store's handoff as reads show it: active, or paused with why and what to do. Setup state, event detail, the
 * reliability reads and `hookrelay store show` take it from here; the rest of the link (credentials, budget, a live
 * check) is the store's platform's to show (Platform.linkState in src/platform/types.ts).
 */
import type { PlatformLinkRow } from '../../db/areas/platform-links.ts';
import { PAUSE_CODES, type PauseCode, type PauseReason, pauseAction } from '../contract/platform.ts';
import type { HandoffState } from '../contract/platform-schemas.ts';
import { isoOrNull } from '../lib/clock.ts';

/**
 * The store's handoff: `active`, or `paused` with its stable code, since when, the next probe and the action that
 * clears it (an install link names the box's public URL and the store's shop).
 */
export function handoffState(link: PlatformLinkRow | null, where: { publicUrl: string; shopDomain: string }): HandoffState {
  if (!link?.pauseReason)
    return { state: 'active', reason: null, code: null, message: null, since: null, nextProbeAt: null, probes: 0, recommendedAction: null };
  const code = (Object.hasOwn(PAUSE_CODES, link.pauseCode ?? '') ? link.pauseCode : null) as PauseCode | null;
  return {
    state: 'paused',
    reason: link.pauseReason as PauseReason,
    code,
    message: link.pauseMessage,
    since: isoOrNull(link.pausedSince),
    nextProbeAt: isoOrNull(link.nextProbeAt),
    probes: link.probes,
    recommendedAction: code ? pauseAction(code, where) : null,
  };
}
